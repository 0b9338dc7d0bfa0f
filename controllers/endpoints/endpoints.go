// Package endpoints is kube-controller-manager's endpoints controller
// (docs/kubernetes-behaviour.md G.10): for every Service with a selector
// (not of type ExternalName) it keeps an Endpoints object of the Service's
// name holding the IPs of the pods the selector matches, ready ones under
// addresses and the others under notReadyAddresses, one entry per port
// the Service's target port resolves to on each pod. A Service without a
// selector is left alone; a deleted Service's Endpoints are deleted.
//
// The identity it runs as needs: services and pods list and watch;
// endpoints list, watch, create, update and delete.
package endpoints

//lint:file-ignore SA1019 v1 Endpoints are deprecated, and served and kept as kube does (G.10)

import (
	"context"
	"log/slog"
	"math"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/endpointslice"
	endpointsliceutil "k8s.io/endpointslice/util"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/endpointutil"
)

// Descriptor runs the controller in the controller manager, as kube's
// "endpoint" controller.
var Descriptor = controllers.Descriptor{Name: "endpoint", ServiceAccount: "endpoint-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	client := c.Client
	if c.Config != nil {
		// Every write of v1 Endpoints is answered with the deprecation
		// warning; the controller's own writes need not log it each time.
		cfg := rest.CopyConfig(c.Config)
		cfg.WarningHandler = rest.NoWarnings{}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		client = cs
	}
	return New(client, c.Informers, c.Logger), nil
}}

const (
	// DefaultWorkers is kube's --concurrent-endpoint-syncs.
	DefaultWorkers = 5
	// maxCapacity is the most addresses an Endpoints object holds; beyond
	// it the object is truncated and annotated.
	maxCapacity = 1000
	// LabelManagedBy and ControllerName mark the Endpoints the controller
	// writes, as kube's does.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	ControllerName = "endpoint-controller"
)

// Controller is the endpoints controller.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	triggers  *endpointsliceutil.TriggerTimeTracker
	log       *slog.Logger
}

// New builds the controller on factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	svcInf := factory.Core().V1().Services()
	podInf := factory.Core().V1().Pods()
	epInf := factory.Core().V1().Endpoints()
	c := &Controller{client: client, services: svcInf.Lister(), pods: podInf.Lister(), endpoints: epInf.Lister(),
		synced: []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, epInf.Informer().HasSynced},
		queue:  controllers.NewQueue("endpoint"), triggers: endpointsliceutil.NewTriggerTimeTracker(), log: log}
	enqueue := func(obj any) { controllers.Enqueue(c.queue, obj) }
	_, _ = svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue})
	_, _ = podInf.Informer().AddEventHandler(endpointutil.PodHandler(c.services, c.queue))
	// A deleted Endpoints object of a Service is made again.
	_, _ = epInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: enqueue})
	return c
}

// Run syncs Services until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, "endpoint", c.queue, DefaultWorkers, c.log, c.sync, c.synced...)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The Service is gone: so are its Endpoints.
		c.triggers.DeleteService(ns, name)
		err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err != nil || !endpointutil.ManagedService(svc) {
		return err
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	trigger := c.triggers.ComputeEndpointLastChangeTriggerTime(ns, svc, pods)
	subsets := repack(subsetsFor(svc, pods))

	cur, err := c.endpoints.Endpoints(ns).Get(name)
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return err
	}
	if create {
		cur = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: ns}}
	}
	want := cur.DeepCopy()
	want.Subsets = subsets
	want.Labels = map[string]string{}
	for k, v := range svc.Labels {
		want.Labels[k] = v
	}
	want.Labels[LabelManagedBy] = ControllerName
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		want.Labels[corev1.IsHeadlessService] = ""
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	if truncate(want) {
		want.Annotations[corev1.EndpointsOverCapacity] = "truncated"
	} else {
		delete(want.Annotations, corev1.EndpointsOverCapacity)
	}
	if !create && apiequality.Semantic.DeepEqual(cur.Subsets, want.Subsets) && apiequality.Semantic.DeepEqual(cur.Labels, want.Labels) &&
		cur.Annotations[corev1.EndpointsOverCapacity] == want.Annotations[corev1.EndpointsOverCapacity] {
		return nil
	}
	if trigger.IsZero() {
		delete(want.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		want.Annotations[corev1.EndpointsLastChangeTriggerTime] = endpointutil.FormatTriggerTime(trigger)
	}
	if create {
		_, err = c.client.CoreV1().Endpoints(ns).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind; the watch brings it
		}
	} else {
		_, err = c.client.CoreV1().Endpoints(ns).Update(ctx, want, metav1.UpdateOptions{})
	}
	if apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil // the namespace is going away
	}
	return err
}

// subsetsFor lists one subset per pod and port: the pod's address of the
// Service's IP family, ready or not (every address counts as ready when
// the Service publishes not-ready addresses).
func subsetsFor(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	tolerate := svc.Spec.PublishNotReadyAddresses
	var subsets []corev1.EndpointSubset
	for _, pod := range pods {
		if !endpointsliceutil.ShouldPodBeInEndpoints(pod, tolerate) {
			continue
		}
		ip := podIP(svc, pod)
		if ip == "" {
			continue
		}
		addr := corev1.EndpointAddress{IP: ip,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if pod.Spec.NodeName != "" {
			addr.NodeName = &pod.Spec.NodeName
		}
		if endpointsliceutil.ShouldSetHostname(pod, svc) {
			addr.Hostname = pod.Spec.Hostname
		}
		ready := tolerate || controllers.PodReady(pod)
		add := func(ports []corev1.EndpointPort) {
			ss := corev1.EndpointSubset{Ports: ports}
			if ready {
				ss.Addresses = []corev1.EndpointAddress{addr}
			} else {
				ss.NotReadyAddresses = []corev1.EndpointAddress{addr}
			}
			subsets = append(subsets, ss)
		}
		if len(svc.Spec.Ports) == 0 {
			// A headless Service may have no ports.
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				add(nil)
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, err := endpointslice.FindPort(pod, sp)
			if err != nil {
				continue
			}
			add([]corev1.EndpointPort{{Name: sp.Name, Port: int32(n), Protocol: sp.Protocol, AppProtocol: sp.AppProtocol}})
		}
	}
	return subsets
}

// podIP is pod's address of svc's IP family: that of its cluster IP, else
// its first IP family, else IPv4; empty when the pod has none.
func podIP(svc *corev1.Service, pod *corev1.Pod) string {
	want6 := false
	if a, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil {
		want6 = a.Is6() && !a.Is4In6()
	} else if len(svc.Spec.IPFamilies) > 0 {
		want6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	}
	ips := []string{pod.Status.PodIP}
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err == nil && (a.Is6() && !a.Is4In6()) == want6 {
			return ip
		}
	}
	return ""
}

// truncate keeps at most maxCapacity addresses, as kube does: when the
// ready ones fit, the not-ready ones are cut, each subset keeping its
// share; otherwise every not-ready address goes and the ready ones are
// cut the same way. It reports whether anything was cut.
func truncate(e *corev1.Endpoints) bool {
	ready, notReady := 0, 0
	for _, ss := range e.Subsets {
		ready += len(ss.Addresses)
		notReady += len(ss.NotReadyAddresses)
	}
	if ready+notReady <= maxCapacity {
		return false
	}
	cutReady := ready > maxCapacity
	room, total := maxCapacity-ready, notReady
	if cutReady {
		room, total = maxCapacity, ready
	}
	left := room
	for i := range e.Subsets {
		ss := &e.Subsets[i]
		n := len(ss.NotReadyAddresses)
		if cutReady {
			n = len(ss.Addresses)
		}
		share := min(int(math.Ceil(float64(n)/float64(total)*float64(room))), left)
		if cutReady {
			ss.Addresses = ss.Addresses[:min(share, len(ss.Addresses))]
			ss.NotReadyAddresses = []corev1.EndpointAddress{}
			left -= len(ss.Addresses)
		} else {
			ss.NotReadyAddresses = ss.NotReadyAddresses[:min(share, len(ss.NotReadyAddresses))]
			left -= len(ss.NotReadyAddresses)
		}
	}
	return true
}
