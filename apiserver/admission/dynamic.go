package admission

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/admissionregistration"
	"github.com/kubegate/kubegate/authz"
)

// Dynamic is kube-apiserver's dynamic admission: the plugins that admit
// writes by the ValidatingAdmissionPolicies, MutatingAdmissionPolicies
// and admission webhook configurations stored in the cluster, which are
// k8s.io/apiserver's own plugins run through Kube steps (D.13).
type Dynamic struct {
	MutatingPolicy, MutatingWebhook, ValidatingPolicy, ValidatingWebhook *Kube
	// Served finds the resource a write is of, whose Equivalents, when
	// set (a custom resource's), make the plugins' object interfaces
	// those of its custom resource; nil: the scheme's for every write.
	Served ResourceLookup
}

// NewDynamic makes the four plugins, which admit nothing until Start.
func NewDynamic() (*Dynamic, error) {
	// No admission configuration file: kube-apiserver's defaults.
	map_, err := mutatingpolicy.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("mutating admission policy plugin: %w", err)
	}
	mwh, err := mutatingwebhook.NewMutatingWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("mutating webhook plugin: %w", err)
	}
	vap, err := validatingpolicy.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("validating admission policy plugin: %w", err)
	}
	vwh, err := validatingwebhook.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("validating webhook plugin: %w", err)
	}
	return &Dynamic{
		MutatingPolicy:    &Kube{Name: mutatingpolicy.PluginName, Plugin: map_},
		MutatingWebhook:   &Kube{Name: mutatingwebhook.PluginName, Plugin: mwh},
		ValidatingPolicy:  &Kube{Name: validatingpolicy.PluginName, Plugin: vap},
		ValidatingWebhook: &Kube{Name: validatingwebhook.PluginName, Plugin: vwh},
	}, nil
}

// Plugins are the steps in kube-apiserver's order, which puts them after
// every plugin of Chain.
func (d *Dynamic) Plugins() []apiserver.Admission {
	return []apiserver.Admission{d.MutatingPolicy, d.MutatingWebhook, d.ValidatingPolicy, d.ValidatingWebhook}
}

func (d *Dynamic) steps() []*Kube {
	return []*Kube{d.MutatingPolicy, d.MutatingWebhook, d.ValidatingPolicy, d.ValidatingWebhook}
}

// DynamicConfig is what the plugins read and call.
type DynamicConfig struct {
	// Scheme is the server's, for the objects the plugins convert, create
	// and decode (a mutating webhook's patched object); Resources answers
	// which kind each resource is; nil: only the exact resource matches a
	// rule; Defaulter gives a patched object its defaults, nil: none.
	Scheme    *runtime.Scheme
	Resources runtime.EquivalentResourceMapper
	Defaulter runtime.ObjectDefaulter
	// Client, Informers, DynamicClient and RESTMapper reach the server
	// itself: the plugins read the configurations, policies, bindings and
	// namespaces through informers of Informers, which Start starts, and
	// a policy's params through DynamicClient at the resource RESTMapper
	// names.
	Client        kubernetes.Interface
	Informers     informers.SharedInformerFactory
	DynamicClient dynamic.Interface
	RESTMapper    meta.RESTMapper
	// Authorizer answers a policy's CEL authorizer variable.
	Authorizer authz.Authorizer
	// ServiceResolver finds the address of a webhook given as a Service;
	// nil: kube's default, NAME.NAMESPACE.svc through DNS.
	ServiceResolver webhookutil.ServiceResolver
	// AuthInfoResolver wraps how webhooks are dialled and authenticated;
	// nil: as kube does with no kubeconfig of webhook credentials.
	AuthInfoResolver webhookutil.AuthenticationInfoResolverWrapper
	// Disabled names the plugins (by Kube.Name) left out, whose
	// configuration kinds the server does not serve: their informers
	// would never sync. They admit every write.
	Disabled []string
}

// Start gives the plugins what they need, as kube-apiserver's plugin
// initializers do, starts the informers and returns once every plugin's
// have synced, as kube-apiserver becomes ready only after them, so that
// no write is refused as not ready. The plugins stop when ctx is done.
func (d *Dynamic) Start(ctx context.Context, c DynamicConfig) error {
	objects := ObjectInterfaces(c.Scheme, c.Resources, c.Defaulter)
	inits := kubeadmission.PluginInitializers{
		initializer.NewAPIServerIDInitializer("kubegate"),
		// The feature gates are k8s.io/apiserver's defaults, those of
		// kube-apiserver 1.37 with no --feature-gates:
		// MutatingAdmissionPolicy is on. None of the four plugins reads
		// the effective version.
		initializer.New(c.Client, c.DynamicClient, c.Informers, KubeAuthorizer(c.Authorizer), utilfeature.DefaultFeatureGate,
			nil, ctx.Done(), c.RESTMapper),
		webhookinit.NewPluginInitializer(c.AuthInfoResolver, c.ServiceResolver),
		excludedInitializer{},
	}
	var started []*Kube
	for _, k := range d.steps() {
		k.served = d.Served
		if slices.Contains(c.Disabled, k.Name) {
			k.Plugin = kubeadmission.NewHandler()
			k.Start(objects)
			continue
		}
		inits.Initialize(k.Plugin)
		if err := kubeadmission.ValidateInitialization(k.Plugin); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
		started = append(started, k)
	}
	c.Informers.Start(ctx.Done())
	for typ, ok := range c.Informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("dynamic admission: informer of %v not synced: %w", typ, ctx.Err())
		}
	}
	for _, k := range started {
		ready, ok := k.Plugin.(interface{ WaitForReady() bool })
		for ok && !ready.WaitForReady() {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: informers not synced: %w", k.Name, ctx.Err())
			}
		}
		k.Start(objects)
	}
	return nil
}

// excludedInitializer gives the plugins admissionregistration.ExcludedResources, as
// kube-apiserver's own initializer does.
type excludedInitializer struct{}

func (excludedInitializer) Initialize(p kubeadmission.Interface) {
	if wants, ok := p.(initializer.WantsExcludedAdmissionResources); ok {
		wants.SetExcludedAdmissionResources(admissionregistration.ExcludedResources)
	}
}
