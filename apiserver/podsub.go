package apiserver

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

	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/store"
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
func (q *request) podForNode() (*corev1.Pod, string, error) {
	kv, err := q.s.cfg.Store.Get(q.ctx(), q.key(q.name))
	if err != nil {
		return nil, "", storeErr(err, q.gr(), q.name)
	}
	obj, err := q.s.decodeKV(q.res, kv)
	if err != nil {
		return nil, "", err
	}
	pod := obj.(*corev1.Pod)
	container := ""
	if q.sub != "portforward" {
		if container, err = pickContainer(pod, q.r.URL.Query().Get("container")); err != nil {
			return nil, "", err
		}
	}
	if pod.Spec.NodeName == "" {
		return pod, container, errNoHost
	}
	if _, err := q.s.cfg.Store.Get(q.ctx(), Key(coreGV.WithResource("nodes"), "", pod.Spec.NodeName)); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// kube-apiserver looks the node up with the pods' resource name.
			return nil, "", apierrors.NewNotFound(q.gr(), pod.Spec.NodeName)
		}
		return nil, "", storeErr(err, q.gr(), q.name)
	}
	return pod, container, nil
}

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
func (q *request) podLog() error {
	pod, container, err := q.podForNode()
	if errors.Is(err, errNoHost) {
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	q.w.Header().Set("Content-Type", "text/plain")
	q.w.WriteHeader(http.StatusOK)
	fmt.Fprint(q.w, simulatedLog(pod, container, q.s.now()))
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
func (q *request) podConnect() error {
	if q.verb == "get" {
		// A WebSocket upgrade comes as a GET; like kube-apiserver, also
		// require the create a POST would need.
		if err := q.authorizeAs("create"); err != nil {
			return err
		}
	}
	pod, _, err := q.podForNode()
	if errors.Is(err, errNoHost) {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	if err != nil {
		return err
	}
	if !httpguts.HeaderValuesContainsToken(q.r.Header["Connection"], "Upgrade") {
		return apierrors.NewBadRequest("Upgrade request required")
	}
	return apierrors.NewInternalError(fmt.Errorf("pod %s/%s runs on the simulated node %s, which runs no containers: %s is not available",
		pod.Namespace, pod.Name, pod.Spec.NodeName, q.sub))
}

// podSubresources are the pods' subresources: status, binding, and those
// that reach a kubelet (D.9), with eviction.
func podSubresources() map[string]Subresource {
	connect := func(name, kind string) *subresource {
		return &subresource{name: name, verbs: []string{"create", "get"}, kind: schema.GroupVersionKind{Kind: kind}, anyAccept: true, serve: (*request).podConnect}
	}
	return subresources(statusSubresource(), bindingSubresource(),
		&subresource{name: "log", verbs: []string{"get"}, kind: schema.GroupVersionKind{Kind: "Pod"}, anyAccept: true, serve: (*request).podLog},
		connect("exec", "PodExecOptions"), connect("attach", "PodAttachOptions"), connect("portforward", "PodPortForwardOptions"),
		&subresource{name: "eviction", verbs: []string{"create"}, kind: policyv1.SchemeGroupVersion.WithKind("Eviction"), anyAccept: true, serve: (*request).evict})
}

// authorizeAs checks that the user may do the request's action with verb
// instead of its own.
func (q *request) authorizeAs(verb string) error {
	ri, _ := authz.RequestInfoFrom(q.ctx())
	attrs := ri.Attributes(q.user())
	attrs.Verb = verb
	decision, reason, err := q.s.cfg.Authorizer.Authorize(q.ctx(), attrs)
	switch {
	case decision == authz.Allow:
		return nil
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	return authz.Forbidden(attrs, reason)
}
