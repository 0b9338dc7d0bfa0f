// Package endpointutil holds what the endpoints and endpointslice
// controllers share, as kube's do (docs/kubernetes-behaviour.md G.10):
// which pods a Service's endpoints hold, the port a Service port reaches
// on a pod, the services that select a pod, and the time to report as a
// change's trigger.
package endpointutil

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
)

// Serves reports whether a Service's endpoints hold pod: a pod not
// finished (Succeeded or Failed) that has an IP, and, unless
// includeTerminating, is not being deleted.
func Serves(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// FindPort returns the port number svcPort's target port is on pod: a
// number as it is; a name, the container port of that name and the
// Service port's protocol, among the containers and the restartable
// (sidecar) init containers.
func FindPort(pod *corev1.Pod, svcPort *corev1.ServicePort) (int32, error) {
	tp := svcPort.TargetPort
	if tp.Type == intstr.Int {
		return int32(tp.IntValue()), nil
	}
	find := func(cs []corev1.Container, sidecarsOnly bool) (int32, bool) {
		for _, c := range cs {
			if sidecarsOnly && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, p := range c.Ports {
				if p.Name == tp.StrVal && p.Protocol == svcPort.Protocol {
					return p.ContainerPort, true
				}
			}
		}
		return 0, false
	}
	if n, ok := find(pod.Spec.Containers, false); ok {
		return n, nil
	}
	if n, ok := find(pod.Spec.InitContainers, true); ok {
		return n, nil
	}
	return 0, fmt.Errorf("no container port named %q for %s", tp.StrVal, svcPort.Protocol)
}

// SetsHostname reports whether pod's hostname belongs in svc's
// endpoints: the pod has one and its subdomain is the Service, in the
// Service's namespace.
func SetsHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace
}

// ManagedService reports whether a controller keeps svc's endpoints: it
// has a selector and is not of type ExternalName.
func ManagedService(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.Selector != nil
}

// ServicesFor returns the keys (namespace/name) of the Services in pod's
// namespace whose selector matches its labels.
func ServicesFor(services corelisters.ServiceLister, pod *corev1.Pod) []string {
	list, err := services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, svc := range list {
		if svc.Spec.Selector == nil {
			continue
		}
		if labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			keys = append(keys, svc.Namespace+"/"+svc.Name)
		}
	}
	return keys
}

// PodHandler is the pod informer handler both controllers register: it
// adds to queue the Services that select a pod added or deleted, and, on
// an update that can change endpoints (PodChanged), those that select the
// pod now and, when its labels changed, those that selected it before.
func PodHandler(services corelisters.ServiceLister, queue workqueue.TypedInterface[string]) cache.ResourceEventHandlerFuncs {
	enqueue := func(pod *corev1.Pod) {
		for _, key := range ServicesFor(services, pod) {
			queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				enqueue(pod)
			}
		},
		UpdateFunc: func(oldObj, curObj any) {
			old, cur := oldObj.(*corev1.Pod), curObj.(*corev1.Pod)
			changed, labelsChanged := PodChanged(old, cur)
			if !changed {
				return
			}
			enqueue(cur)
			if labelsChanged {
				enqueue(old)
			}
		},
		DeleteFunc: func(obj any) {
			if pod, ok := controllers.Unwrap(obj).(*corev1.Pod); ok {
				enqueue(pod)
			}
		},
	}
}

// PodChanged reports whether a pod update can change endpoints: its IPs,
// readiness, labels, deletion, node, hostname, subdomain or phase.
func PodChanged(old, cur *corev1.Pod) (changed, labelsChanged bool) {
	labelsChanged = !labels.Equals(old.Labels, cur.Labels)
	readyOld, readyCur := controllers.PodReady(old), controllers.PodReady(cur)
	changed = labelsChanged || readyOld != readyCur || old.Status.PodIP != cur.Status.PodIP ||
		len(old.Status.PodIPs) != len(cur.Status.PodIPs) || (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		old.Spec.NodeName != cur.Spec.NodeName || old.Spec.Hostname != cur.Spec.Hostname || old.Spec.Subdomain != cur.Spec.Subdomain ||
		old.Status.Phase != cur.Status.Phase
	if !changed {
		for i := range old.Status.PodIPs {
			if old.Status.PodIPs[i].IP != cur.Status.PodIPs[i].IP {
				return true, labelsChanged
			}
		}
	}
	return changed, labelsChanged
}

// TriggerTimes computes the endpoints.kubernetes.io/last-change-trigger-
// time of a Service's endpoints, as kube's trigger time tracker does: the
// creation time of a Service seen for the first time; after that the
// earliest of the trigger times that moved since the last sync (a pod's
// Ready transition, the Service's creation), or zero when none did.
type TriggerTimes struct {
	mu    sync.Mutex
	state map[string]triggerState
}

type triggerState struct {
	pods    map[string]time.Time
	service time.Time
}

// Compute returns the trigger time for svc with pods and remembers them.
func (t *TriggerTimes) Compute(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := svc.Namespace + "/" + svc.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == nil {
		t.state = map[string]triggerState{}
	}
	old, known := t.state[key]
	var earliest time.Time
	take := func(at time.Time) {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	cur := triggerState{pods: map[string]time.Time{}, service: svc.CreationTimestamp.Time}
	for _, pod := range pods {
		c := controllers.PodReadyCondition(pod)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		at := c.LastTransitionTime.Time
		cur.pods[pod.Name] = at
		if at.After(old.pods[pod.Name]) {
			take(at)
		}
	}
	if cur.service.After(old.service) {
		take(cur.service)
	}
	t.state[key] = cur
	if !known {
		return svc.CreationTimestamp.Time
	}
	return earliest
}

// Forget drops what is remembered of a deleted Service.
func (t *TriggerTimes) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.state, key)
}

// FormatTriggerTime is the annotation's format, RFC 3339 with nanoseconds
// in UTC.
func FormatTriggerTime(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }
