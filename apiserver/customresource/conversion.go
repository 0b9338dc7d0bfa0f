package customresource

import (
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	if crd.Spec.PreserveUnknownFields {
		return safe, nil
	}
	p := pruning{ObjectConvertor: safe, schemas: map[string]*structuralschema.Structural{}}
	for _, v := range crd.Spec.Versions {
		if s, err := structuralOf(crd, v.Name); err == nil && s != nil {
			p.schemas[v.Name] = s
		}
	}
	return p, nil
}

// pruning is kube's schema-coercing converter around the webhook's: what
// the webhook returns is pruned by the structural schema of the version
// it converted to, and its metadata coerced, as kube-apiserver's
// custom-resource codec does, so a field that version's schema does not
// have is neither stored nor served (I.2).
type pruning struct {
	runtime.ObjectConvertor
	schemas map[string]*structuralschema.Structural // by version
}

func (p pruning) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	out, err := p.ObjectConvertor.ConvertToVersion(in, gv)
	if err != nil {
		return nil, err
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return out, nil
	}
	if s := p.schemas[u.GroupVersionKind().Version]; s != nil {
		structuralpruning.PruneWithOptions(u.Object, s, true, structuralschema.UnknownFieldPathOptions{})
		if err, _ := schemaobjectmeta.CoerceWithOptions(nil, u.Object, s, false, zeroOptions(schemaobjectmeta.CoerceWithOptions)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// structuralOf is the structural schema of crd's version, nil without a
// schema.
func structuralOf(crd *apiextensionsv1.CustomResourceDefinition, version string) (*structuralschema.Structural, error) {
	val, err := apihelpers.GetSchemaForVersion(crd, version)
	if err != nil || val == nil {
		return nil, err
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return nil, err
	}
	return structuralschema.NewStructural(internal.OpenAPIV3Schema)
}
