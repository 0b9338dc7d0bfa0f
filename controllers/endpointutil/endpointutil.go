// Package endpointutil holds what the endpoints and endpointslice
// controllers share beside the k8s.io/endpointslice module (which pods a
// Service's endpoints hold, the port a Service port reaches on a pod, the
// trigger time tracker): which Services they keep endpoints for, the
// Services a pod change concerns, and the trigger time annotation's
// format (docs/kubernetes-behaviour.md G.10).
package endpointutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
)

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
//
// kube's controllers decide this with k8s.io/endpointslice/util's
// GetPodUpdateProjectionKey, which kubegate does not use: it ignores a
// change of phase, node or status.podIP alone, and a pod that finishes
// without ever having been ready changes neither its readiness nor its
// IPs, so kube keeps its endpoint until something else syncs the
// Service. Every update kube's function acts on, this one acts on too.
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

// FormatTriggerTime is the annotation's format, RFC 3339 with nanoseconds
// in UTC.
func FormatTriggerTime(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }
