package jwt

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/apiserver/pkg/apis/apiserver/validation"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
)

// Config is kube-apiserver's AuthenticationConfiguration, in its internal
// form: the jwt[] authenticators and the anonymous settings.
type Config = apiserver.AuthenticationConfiguration

var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	install.Install(s)
	// Strict: an unknown or duplicated field is an error, as in
	// kube-apiserver.
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// ParseConfig decodes an AuthenticationConfiguration file, in YAML or
// JSON, of apiVersion apiserver.config.k8s.io/v1, v1beta1 or v1alpha1
// (A.8). It does not validate it: see Validate.
func ParseConfig(data []byte) (*Config, error) {
	if len(data) == 0 {
		return nil, errors.New("empty config data")
	}
	obj, err := runtime.Decode(codecs.UniversalDecoder(), data)
	if err != nil {
		return nil, err
	}
	c, ok := obj.(*Config)
	if !ok || c == nil {
		return nil, fmt.Errorf("expected AuthenticationConfiguration, got %T", obj)
	}
	return c, nil
}

// Validate checks c as kube-apiserver does, CEL expressions compiled,
// issuers checked against the service-account issuers (which no JWT
// authenticator may claim). The error lists each problem with its field
// path, for example `jwt[0].issuer.url: Invalid value: …`.
func Validate(c *Config, serviceAccountIssuers []string) error {
	errs := validation.ValidateAuthenticationConfiguration(compiler(), c, serviceAccountIssuers)
	if err := errs.ToAggregate(); err != nil {
		return fmt.Errorf("invalid authentication configuration: %w", err)
	}
	return nil
}

// compiler returns the CEL compiler the validation and the authenticators
// share; building a CEL environment is costly, so it is built once.
var compiler = sync.OnceValue(authenticationcel.NewDefaultCompiler)
