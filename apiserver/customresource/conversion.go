package customresource

import (
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// Converters makes the converter between the versions of a definition's
// custom resources: kube's CRConverterFactory, whose converter of a
// definition with conversion Webhook calls its webhook with a
// ConversionReview (I.2).
type Converters interface {
	NewConverter(crd *apiextensionsv1.CustomResourceDefinition) (safe, unsafe runtime.ObjectConvertor, err error)
}

var _ Converters = (*conversion.CRConverterFactory)(nil)

// NewConverters returns kube's converter factory, whose webhooks are
// found by services (a webhook given as a Service) and dialled with the
// client configuration auth gives; nil: kube's defaults (a Service's
// DNS name, no credentials).
func NewConverters(services webhookutil.ServiceResolver, auth webhookutil.AuthenticationInfoResolverWrapper) (Converters, error) {
	if services == nil {
		services = webhookutil.NewDefaultServiceResolver()
	}
	return conversion.NewCRConverterFactory(services, auth)
}

// defaultConverters is what Resources converts with.
var defaultConverters = sync.OnceValues(func() (Converters, error) { return NewConverters(nil, nil) })

// convertor returns the converter of crd's objects between its versions,
// kube's safe one (it converts copies), for a definition with conversion
// Webhook; nil for None, where only apiVersion changes, as the server
// does without one.
func convertor(crd *apiextensionsv1.CustomResourceDefinition, conv Converters) (runtime.ObjectConvertor, error) {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil, nil
	}
	if conv == nil {
		var err error
		if conv, err = defaultConverters(); err != nil {
			return nil, err
		}
	}
	safe, _, err := conv.NewConverter(crd)
	if err != nil {
		return nil, fmt.Errorf("conversion webhook: %w", err)
	}
	return safe, nil
}
