package server

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/admission"
	"github.com/kubegate/kubegate/authz"
)

// restMapperReset is how often the RESTMapper that finds a policy's
// paramKind forgets what discovery told it, so that a kind served later
// is found: kube-apiserver resets its own every 30 s.
const restMapperReset = 30 * time.Second

// configurationResources are the kinds each dynamic plugin reads. A
// plugin whose kinds the server does not serve is left out of the chain
// (admits everything): its informers could never sync.
var configurationResources = map[string][]string{
	mutatingpolicy.PluginName:    {"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
	mutatingwebhook.PluginName:   {"mutatingwebhookconfigurations"},
	validatingpolicy.PluginName:  {"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
	validatingwebhook.PluginName: {"validatingwebhookconfigurations"},
}

// startDynamicAdmission gives the dynamic admission plugins what they
// read and call, all through the server's own loopback client (in
// process, as system:apiserver), and returns once their informers have
// synced: kube-apiserver is not ready before its admission informers
// are, and kubegate serves no request before New returns, so no write is
// refused as "not yet ready". The informers stop when ctx is done.
func (s *Server) startDynamicAdmission(ctx context.Context, dyn *admission.Dynamic, resources []*apiserver.Resource, authorizer authz.Authorizer) error {
	dyn.Served = s.Server.ServedResource
	loopback := s.LoopbackConfig()
	client, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return fmt.Errorf("dynamic admission: loopback client: %w", err)
	}
	dynamicClient, err := dynamic.NewForConfig(loopback)
	if err != nil {
		return fmt.Errorf("dynamic admission: loopback client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	// kube-apiserver's RESTMapper for params: discovery, cached, reset
	// now and then.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	go wait.Until(mapper.Reset, restMapperReset, ctx.Done())

	served := map[schema.GroupVersionResource]bool{}
	equivalents := runtime.NewEquivalentResourceRegistry()
	for _, r := range resources {
		served[r.GVR] = true
		equivalents.RegisterKindFor(r.GVR, "", r.GVR.GroupVersion().WithKind(r.Kind))
	}
	var disabled []string
	for name, rs := range configurationResources {
		for _, r := range rs {
			if !served[admissionregistrationv1.SchemeGroupVersion.WithResource(r)] {
				disabled = append(disabled, name)
				break
			}
		}
	}
	services := endpointResolver{services: factory.Core().V1().Services().Lister(),
		slices: factory.Discovery().V1().EndpointSlices().Lister()}
	// No proxy, no egress selector: webhooks are dialled directly. One at
	// kubernetes.default.svc:443 is the server itself, reached through
	// the loopback client as in kube-apiserver.
	auth := webhookutil.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, loopback, noop.NewTracerProvider())
	// CRDs' conversion webhooks are reached as admission webhooks are.
	s.conversion.set(services, auth)
	return dyn.Start(ctx, admission.DynamicConfig{
		Scheme:           s.Server.Scheme(),
		Resources:        equivalents,
		Defaulter:        admission.Defaulter(s.Server.Scheme(), resources),
		Client:           client,
		Informers:        factory,
		DynamicClient:    dynamicClient,
		RESTMapper:       mapper,
		Authorizer:       authorizer,
		ServiceResolver:  services,
		AuthInfoResolver: auth,
		Disabled:         disabled,
	})
}

// endpointResolver finds the address of a webhook given as a Service: a
// ready endpoint of the Service's port, as kube-apiserver finds it with
// --enable-aggregator-routing. kube-apiserver's default dials the
// Service's cluster IP, which kube-proxy routes to an endpoint; kubegate
// has no kube-proxy, so its cluster IPs lead nowhere, and it goes to the
// endpoint itself. The webhook's TLS server name is still
// NAME.NAMESPACE.svc.
type endpointResolver struct {
	services listersv1.ServiceLister
	slices   discoverylisters.EndpointSliceLister
}

func (r endpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	svc, err := r.services.Services(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port)))}, nil
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
	if i < 0 {
		return nil, fmt.Errorf("no service port %d found for service %q", port, name)
	}
	portName := svc.Spec.Ports[i].Name
	eps, err := r.slices.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(eps, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	for _, es := range eps {
		for _, p := range es.Ports {
			if p.Port == nil || ptr.Deref(p.Name, "") != portName {
				continue
			}
			for _, ep := range es.Endpoints {
				if ptr.Deref(ep.Conditions.Ready, true) && len(ep.Addresses) > 0 {
					return &url.URL{Scheme: "https", Host: net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port)))}, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("service %q unavailable", name)
}
