package core

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/apiserver"
)

// The pod subresources that reach a kubelet: log, exec, attach and
// portforward (D.9). kube-apiserver checks the pod, picks the container
// and asks the node's kubelet. kubegate answers the same checks with the
// same errors; its nodes are simulated and run no containers, so a log
// is a short synthetic one and exec, attach and port-forward are refused
// with an internal error that says why.

// podForNode reads the pod of the request and finds the container the
// request names (none for portforward), as kube-apiserver does before it
// contacts the node: a pod not yet bound is errNoHost, a node that does not
// exist is the NotFound kube answers (naming the node as a pod).
func podForNode(req *apiserver.Request, sub string) (*corev1.Pod, string, error) {
	obj, err := req.Get(podsGVR, req.Namespace(), req.Name())
	if err != nil {
		return nil, "", err
	}
	pod := obj.(*corev1.Pod)
	container := ""
	if sub != "portforward" {
		_, r := req.HTTP()
		if container, err = pickContainer(pod, r.URL.Query().Get("container")); err != nil {
			return nil, "", err
		}
	}
	if pod.Spec.NodeName == "" {
		return pod, container, errNoHost
	}
	if _, err := req.Get(nodesGVR, "", pod.Spec.NodeName); err != nil {
		if apierrors.IsNotFound(err) {
			// kube-apiserver looks the node up with the pods' resource name.
			return nil, "", apierrors.NewNotFound(podsGVR.GroupResource(), pod.Spec.NodeName)
		}
		return nil, "", err
	}
	return pod, container, nil
}

var nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")

// errNoHost: the pod is not bound to a node yet.
var errNoHost = errors.New("pod has no host")

// pickContainer returns the container a request names, or the pod's only
// container when it names none.
func pickContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 1 {
			return pod.Spec.Containers[0].Name, nil
		}
		names := make([]string, 0, len(pod.Spec.Containers))
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
	}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			if c.Name == name {
				return name, nil
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// podLog serves GET pods/NAME/log. A pod not yet bound has no log: 204
// with no body, as kube-apiserver answers.
func podLog(req *apiserver.Request, sub string) error {
	pod, container, err := podForNode(req, sub)
	w, _ := req.HTTP()
	if errors.Is(err, errNoHost) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, simulatedLog(pod, container, req.Now()))
	return nil
}

// simulatedLog is the log of a container on a simulated node: what the
// node did with it, timestamped like a kubelet's log lines.
func simulatedLog(pod *corev1.Pod, container string, now time.Time) string {
	started := pod.CreationTimestamp.Time
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container && s.State.Running != nil {
			started = s.State.Running.StartedAt.Time
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s kubegate: container %q of pod %s/%s runs on the simulated node %s\n",
		started.UTC().Format(time.RFC3339), container, pod.Namespace, pod.Name, pod.Spec.NodeName)
	fmt.Fprintf(&b, "%s kubegate: simulated nodes run no processes, so there is no output to show\n", now.UTC().Format(time.RFC3339))
	return b.String()
}

// podConnect serves exec, attach and portforward. Like kube-apiserver it
// checks the pod and the container first, then wants a connection
// upgrade; with one, it refuses, as no simulated node runs a container.
func podConnect(req *apiserver.Request, sub string) error {
	if req.Verb() == "get" {
		// A WebSocket upgrade comes as a GET; like kube-apiserver, also
		// require the create a POST would need.
		if err := req.AuthorizeAs("create"); err != nil {
			return err
		}
	}
	// kube-apiserver admits a connect, with its options, before it looks
	// at the pod (D.13).
	_, r := req.HTTP()
	opts := connectOptions(sub, r.URL.Query())
	if err := req.Admit(apiserver.Connect, req.Name(), opts.GetObjectKind().GroupVersionKind(), opts); err != nil {
		return err
	}
	pod, _, err := podForNode(req, sub)
	if errors.Is(err, errNoHost) {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	if err != nil {
		return err
	}
	if !httpguts.HeaderValuesContainsToken(r.Header["Connection"], "Upgrade") {
		return apierrors.NewBadRequest("Upgrade request required")
	}
	return apierrors.NewInternalError(fmt.Errorf("pod %s/%s runs on the simulated node %s, which runs no containers: %s is not available",
		pod.Namespace, pod.Name, pod.Spec.NodeName, sub))
}

// podSubresource is one of the pods' subresources served by a function of
// the request and its name; its answer takes any Accept, as a log's text
// and a connection's stream do (D.9).
type podSubresource struct {
	name  string
	verbs []string
	kind  schema.GroupVersionKind
	serve func(req *apiserver.Request, sub string) error
}

func (s *podSubresource) Name() string                       { return s.name }
func (s *podSubresource) Verbs() []string                    { return s.verbs }
func (s *podSubresource) Kind() schema.GroupVersionKind      { return s.kind }
func (s *podSubresource) Serve(req *apiserver.Request) error { return s.serve(req, s.name) }
func (s *podSubresource) AcceptsAny() bool                   { return true }

var _ apiserver.AnyAccepter = (*podSubresource)(nil)

// podSubresources are the pods' subresources: status, binding, those
// that reach a kubelet (D.9), eviction, the parts of the spec that
// ephemeralcontainers and resize write, and proxy.
func podSubresources() map[string]apiserver.Subresource {
	connect := func(name, kind string) *podSubresource {
		return &podSubresource{name: name, verbs: []string{"create", "get"}, kind: schema.GroupVersionKind{Kind: kind}, serve: podConnect}
	}
	subs := []apiserver.Subresource{apiserver.StatusSubresource(), bindingSubresource{},
		&podSubresource{name: "log", verbs: []string{"get"}, kind: schema.GroupVersionKind{Kind: "Pod"}, serve: podLog},
		connect("exec", "PodExecOptions"), connect("attach", "PodAttachOptions"), connect("portforward", "PodPortForwardOptions"),
		&podSubresource{name: "eviction", verbs: []string{"create"}, kind: policyv1.SchemeGroupVersion.WithKind("Eviction"), serve: evict},
		apiserver.PartSubresource("ephemeralcontainers"), apiserver.PartSubresource("resize"), podProxy()}
	m := make(map[string]apiserver.Subresource, len(subs))
	for _, sub := range subs {
		m[sub.Name()] = sub
	}
	return m
}
