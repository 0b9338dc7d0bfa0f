package server

import (
	"errors"
	"net/url"
	"sync/atomic"

	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/customresource"
)

// conversionWebhooks are how the conversion webhooks of
// CustomResourceDefinitions are reached: as dynamic admission's webhooks
// are (a Service at a ready endpoint, kubernetes.default.svc through the
// loopback client, D.13). Custom resources are served before the server
// listens, and these are known only once it does: until then a webhook
// given as a Service cannot be resolved, and one given by url is dialled
// without the loopback client.
type conversionWebhooks struct {
	services atomic.Pointer[endpointResolver]
	auth     atomic.Pointer[webhookutil.AuthenticationInfoResolverWrapper]
}

// converters returns kube's converter factory reaching webhooks through c.
func (c *conversionWebhooks) converters() (customresource.Converters, error) {
	return customresource.NewConverters(c, func(delegate webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
		return lateAuth{c: c, delegate: delegate}
	})
}

// set makes the webhooks reached through services and auth from now on.
func (c *conversionWebhooks) set(services endpointResolver, auth webhookutil.AuthenticationInfoResolverWrapper) {
	c.services.Store(&services)
	c.auth.Store(&auth)
}

var errNoServiceResolver = errors.New("services are not resolved before the server listens")

func (c *conversionWebhooks) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	r := c.services.Load()
	if r == nil {
		return nil, errNoServiceResolver
	}
	return r.ResolveEndpoint(namespace, name, port)
}

// lateAuth resolves a webhook's client configuration with the wrapper
// set last, or with delegate alone before one is.
type lateAuth struct {
	c        *conversionWebhooks
	delegate webhookutil.AuthenticationInfoResolver
}

func (a lateAuth) resolver() webhookutil.AuthenticationInfoResolver {
	if w := a.c.auth.Load(); w != nil && *w != nil {
		return (*w)(a.delegate)
	}
	return a.delegate
}

func (a lateAuth) ClientConfigFor(hostPort string) (*rest.Config, error) {
	return a.resolver().ClientConfigFor(hostPort)
}

func (a lateAuth) ClientConfigForService(serviceName, serviceNamespace string, servicePort int) (*rest.Config, error) {
	return a.resolver().ClientConfigForService(serviceName, serviceNamespace, servicePort)
}
