package core

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/kubegate/kubegate/apiserver"
)

// The proxy subresources of pods, nodes and services (D.9):
// RESOURCE/NAME/proxy and RESOURCE/NAME/proxy/PATH, where NAME may be
// NAME:PORT or SCHEME:NAME:PORT. kube-apiserver finds the address to
// dial (the pod's IP, the node's kubelet, a ready endpoint of the
// service) and relays the request there. kubegate finds the same address
// with the same refusals on the way; its pods and nodes are simulated and
// listen nowhere, so where kube would dial, the answer is the 503 kube
// gives for an address it cannot reach.

// proxyVerbs are the verbs discovery lists for a proxy subresource, those
// of the HTTP methods it relays.
var proxyVerbs = []string{"create", "delete", "get", "patch", "update"}

// proxySubresource is RESOURCE/proxy of one resource.
type proxySubresource struct {
	kind   string
	target func(req *apiserver.Request, scheme, name, port string) (string, error)
}

func (s *proxySubresource) Name() string    { return "proxy" }
func (s *proxySubresource) Verbs() []string { return proxyVerbs }
func (s *proxySubresource) Kind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Kind: s.kind}
}
func (s *proxySubresource) AcceptsAny() bool   { return true }
func (s *proxySubresource) TakesAnyPath() bool { return true }

var (
	_ apiserver.AnyAccepter  = (*proxySubresource)(nil)
	_ apiserver.AnyPathEntry = (*proxySubresource)(nil)
)

// Serve admits the connect with its options, then finds the target as
// kube-apiserver does and answers that it cannot be reached.
func (s *proxySubresource) Serve(req *apiserver.Request) error {
	_, r := req.HTTP()
	if err := req.Admit(apiserver.Connect, req.Name(), corev1.SchemeGroupVersion.WithKind(s.kind), proxyOptions(s.kind, proxyPath(r.URL.Path))); err != nil {
		return err
	}
	resource := strings.TrimSuffix(req.Resource().GVR.Resource, "s")
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(req.Name())
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid %s request %q", resource, req.Name()))
	}
	addr, err := s.target(req, scheme, name, port)
	if err != nil {
		return err
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: dial tcp %s: kubegate's simulated nodes and pods listen on no address", addr))
}

// proxyPath is what follows RESOURCE/NAME/proxy in a URL path.
func proxyPath(p string) string {
	if i := strings.Index(p, "/proxy/"); i >= 0 {
		return p[i+len("/proxy/"):]
	}
	return ""
}

// proxyOptions are the options of a proxy connect, for admission.
func proxyOptions(kind, path string) runtime.Object {
	tm := metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: kind}
	switch kind {
	case "NodeProxyOptions":
		return &corev1.NodeProxyOptions{TypeMeta: tm, Path: path}
	case "ServiceProxyOptions":
		return &corev1.ServiceProxyOptions{TypeMeta: tm, Path: path}
	}
	return &corev1.PodProxyOptions{TypeMeta: tm, Path: path}
}

func podProxy() apiserver.Subresource {
	return &proxySubresource{kind: "PodProxyOptions", target: podProxyTarget}
}

func nodeProxy() apiserver.Subresource {
	return &proxySubresource{kind: "NodeProxyOptions", target: nodeProxyTarget}
}

func serviceProxy() apiserver.Subresource {
	return &proxySubresource{kind: "ServiceProxyOptions", target: serviceProxyTarget}
}

// podProxyTarget is the pod's first IP, at the port named or else the
// first port of its containers; a pod without a global unicast IP is 400.
func podProxyTarget(req *apiserver.Request, _, name, port string) (string, error) {
	obj, err := req.Get(podsGVR, req.Namespace(), name)
	if err != nil {
		return "", err
	}
	pod := obj.(*corev1.Pod)
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	ip := ""
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsGlobalUnicast() {
		return "", apierrors.NewBadRequest("address not allowed")
	}
	if port == "" {
		return ip, nil
	}
	return net.JoinHostPort(ip, port), nil
}

// nodeProxyTarget is the node's kubelet: its address of the first type
// in kube-apiserver's default preference, at its kubelet port (10250 when
// it reports none), or at the port named.
func nodeProxyTarget(req *apiserver.Request, _, name, port string) (string, error) {
	obj, err := req.Get(nodesGVR, "", name)
	if err != nil {
		return "", err
	}
	node := obj.(*corev1.Node)
	host := ""
	for _, t := range []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && host == "" {
				host = a.Address
			}
		}
	}
	if host == "" {
		return "", apierrors.NewInternalError(fmt.Errorf("no preferred addresses found; known addresses: %v", node.Status.Addresses))
	}
	if port == "" {
		port = "10250"
		if p := node.Status.DaemonEndpoints.KubeletEndpoint.Port; p > 0 {
			port = strconv.Itoa(int(p))
		}
	}
	return net.JoinHostPort(host, port), nil
}

// serviceProxyTarget is a ready endpoint of the service's port (named, or
// given by number): kube's 503 when the service has no such port or no
// ready endpoint backed by a pod with that IP. A port named by name does
// not read the service, so a missing service has no endpoints.
func serviceProxyTarget(req *apiserver.Request, _, name, port string) (string, error) {
	if n, err := strconv.ParseInt(port, 10, 64); err == nil {
		obj, err := req.Get(servicesGVR, req.Namespace(), name)
		if err != nil {
			return "", err
		}
		found := false
		for _, p := range obj.(*corev1.Service).Spec.Ports {
			if int64(p.Port) == n {
				port, found = p.Name, true
				break
			}
		}
		if !found {
			return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
		}
	}
	none := apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	objs, err := req.List(endpointSlicesGVR, req.Namespace())
	if err != nil {
		return "", none
	}
	for _, obj := range objs {
		slice := obj.(*discoveryv1.EndpointSlice)
		if slice.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		if addr := sliceEndpoint(req, slice, port); addr != "" {
			return addr, nil
		}
	}
	return "", none
}

var (
	servicesGVR       = corev1.SchemeGroupVersion.WithResource("services")
	endpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
)

// sliceEndpoint is the first ready endpoint of slice at its port named
// port whose pod has the endpoint's address; "" when there is none.
func sliceEndpoint(req *apiserver.Request, slice *discoveryv1.EndpointSlice, port string) string {
	for _, p := range slice.Ports {
		if p.Name == nil || *p.Name != port || p.Port == nil {
			continue
		}
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 || !endpointIsPod(req, ep) {
				continue
			}
			return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port)))
		}
	}
	return ""
}

// endpointIsPod reports whether ep names a pod of the request's namespace
// that has the endpoint's address, as kube proxies only to pods.
func endpointIsPod(req *apiserver.Request, ep discoveryv1.Endpoint) bool {
	if ep.TargetRef == nil || ep.TargetRef.Namespace != req.Namespace() {
		return false
	}
	obj, err := req.Get(podsGVR, req.Namespace(), ep.TargetRef.Name)
	if err != nil {
		return false
	}
	for _, ip := range obj.(*corev1.Pod).Status.PodIPs {
		if ip.IP == ep.Addresses[0] {
			return true
		}
	}
	return false
}
