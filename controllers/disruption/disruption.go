// Package disruption is kube-controller-manager's disruption controller
// (docs/kubernetes-behaviour.md G.12): it keeps the status of every
// PodDisruptionBudget in step with the pods it selects, so that the API
// server's eviction subresource knows how many of them may be disrupted.
//
// For each budget it counts:
//
//   - expectedPods: with an integer minAvailable, the pods the selector
//     matches; otherwise the sum of the scales of the controllers that own
//     them (a ReplicationController's, a Deployment's for a ReplicaSet it
//     owns, a ReplicaSet's, a StatefulSet's spec.replicas, any other
//     kind's scale subresource). A pod without a controller cannot be
//     counted that way: the budget gets an UnmanagedPods warning event;
//   - desiredHealthy: minAvailable, or expectedPods less maxUnavailable
//     (percentages rounded up against expectedPods), never below 0;
//   - currentHealthy: the ready pods not being deleted and not recorded
//     as disrupted;
//   - disruptionsAllowed: currentHealthy - desiredHealthy, not below 0,
//     and 0 when no pod is expected;
//
// and writes them with observedGeneration and the DisruptionAllowed
// condition (SufficientPods, InsufficientPods). An entry of
// status.disruptedPods, which an eviction adds, is dropped once its pod
// is being deleted or gone, or two minutes after the eviction (the pod
// then gets a NotDeleted warning event), and the budget is looked at
// again when the oldest entry expires. When the counting fails (a pod
// whose controller is not found, a kind without a scale) the budget
// allows no disruption and its condition says SyncFailed with the error.
//
// A pod left with the DisruptionTarget condition True for two minutes
// without being deleted gets the condition set to False, as kube does.
//
// The identity it runs as needs: poddisruptionbudgets list, watch, get;
// poddisruptionbudgets/status update; pods list, watch, get; pods/status
// update; replicationcontrollers, replicasets, deployments, statefulsets
// list, watch; any scale subresource get; events create, patch.
package disruption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/kubegate/kubegate/controllers"
)

// Descriptor runs the controller in the controller manager, as kube's
// "disruption" controller.
var Descriptor = controllers.Descriptor{Name: "disruption", ServiceAccount: "disruption-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	return New(c, dyn), nil
}}

const (
	// DeletionTimeout is how long an eviction's entry in
	// status.disruptedPods counts the pod as disrupted while it is not
	// being deleted.
	DeletionTimeout = 2 * time.Minute
	// staleConditionTimeout is how long a pod keeps a DisruptionTarget
	// condition without being deleted.
	staleConditionTimeout = 2 * time.Minute
)

// Controller computes the status of PodDisruptionBudgets.
type Controller struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
	log     *slog.Logger
	now     func() time.Time

	pdbs        policylisters.PodDisruptionBudgetLister
	pods        corelisters.PodLister
	rcs         corelisters.ReplicationControllerLister
	rss         appslisters.ReplicaSetLister
	deployments appslisters.DeploymentLister
	sets        appslisters.StatefulSetLister
	synced      []cache.InformerSynced

	queue       workqueue.TypedRateLimitingInterface[string]
	recheck     workqueue.TypedDelayingInterface[string]
	stalePods   workqueue.TypedRateLimitingInterface[string]
	recorder    record.EventRecorder
	startEvents func() (stop func())
}

// New builds the controller from c's informers; dyn reads the scale of
// controllers of kinds other than the built-in workloads.
func New(c *controllers.Context, dyn dynamic.Interface) *Controller {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	dc := &Controller{client: c.Client, dynamic: dyn, log: log, now: now,
		queue:     controllers.NewQueue("disruption"),
		recheck:   workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: "disruption_recheck"}),
		stalePods: controllers.NewQueue("stale_pod_disruption"),
	}
	dc.recorder, dc.startEvents = controllers.NewLazyRecorder(dc.client, "controllermanager")

	f := c.Informers
	pdbInf, podInf := f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods()
	rcInf, rsInf := f.Core().V1().ReplicationControllers(), f.Apps().V1().ReplicaSets()
	dInf, ssInf := f.Apps().V1().Deployments(), f.Apps().V1().StatefulSets()
	dc.pdbs, dc.pods, dc.rcs, dc.rss, dc.deployments, dc.sets = pdbInf.Lister(), podInf.Lister(), rcInf.Lister(), rsInf.Lister(), dInf.Lister(), ssInf.Lister()
	dc.synced = []cache.InformerSynced{pdbInf.Informer().HasSynced, podInf.Informer().HasSynced, rcInf.Informer().HasSynced,
		rsInf.Informer().HasSynced, dInf.Informer().HasSynced, ssInf.Informer().HasSynced}
	// The workload informers are read only; they are registered so that
	// they are started and synced.
	_, _ = pdbInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { controllers.Enqueue(dc.queue, obj) },
		UpdateFunc: func(_, obj any) { controllers.Enqueue(dc.queue, obj) },
		DeleteFunc: func(obj any) { controllers.Enqueue(dc.queue, obj) },
	})
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { dc.podChanged(obj, true) },
		UpdateFunc: func(_, obj any) { dc.podChanged(obj, true) },
		DeleteFunc: func(obj any) { dc.podChanged(obj, false) },
	})
	return dc
}

// podChanged queues the budget of a pod that changed, and (when it is not
// deleted) the pod itself if its DisruptionTarget condition will go stale.
func (dc *Controller) podChanged(obj any, exists bool) {
	obj = controllers.Unwrap(obj)
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pdb := dc.budgetOf(pod); pdb != nil {
		controllers.Enqueue(dc.queue, pdb)
	}
	if !exists {
		return
	}
	if stale, after := dc.staleDisruption(pod); stale {
		if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
			dc.stalePods.AddAfter(key, after)
		}
	}
}

// budgetOf returns the first budget of the pod's namespace that selects
// it; a pod with more than one gets a warning event, as in kube.
func (dc *Controller) budgetOf(pod *corev1.Pod) *policyv1.PodDisruptionBudget {
	pdbs, err := dc.pdbs.GetPodPodDisruptionBudgets(pod)
	if err != nil || len(pdbs) == 0 {
		return nil
	}
	if len(pdbs) > 1 {
		msg := fmt.Sprintf("Pod %q/%q matches multiple PodDisruptionBudgets.  Chose %q arbitrarily.", pod.Namespace, pod.Name, pdbs[0].Name)
		dc.log.Info(msg)
		dc.recorder.Event(pod, corev1.EventTypeWarning, "MultiplePodDisruptionBudgets", msg)
	}
	return pdbs[0]
}

// Run works until ctx is done.
func (dc *Controller) Run(ctx context.Context) error {
	defer dc.startEvents()()
	defer dc.recheck.ShutDown()
	// A recheck is a sync of the budget through the main queue.
	go func() {
		for {
			key, quit := dc.recheck.Get()
			if quit {
				return
			}
			dc.queue.Add(key)
			dc.recheck.Done(key)
		}
	}()
	errc := make(chan error, 1)
	go func() {
		errc <- controllers.RunWorkers(ctx, "disruption", dc.stalePods, 1, dc.log, dc.syncStalePod, dc.synced...)
	}()
	err := controllers.RunWorkers(ctx, "disruption", dc.queue, 1, dc.log, dc.sync, dc.synced...)
	return errors.Join(err, <-errc)
}

// sync brings the status of the budget key in step.
func (dc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pdb, err := dc.pdbs.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = dc.trySync(ctx, pdb)
	if err == nil || apierrors.IsConflict(err) {
		return err
	}
	dc.log.Error("sync PodDisruptionBudget failed", "pdb", key, "err", err)
	return dc.failSafe(ctx, pdb, err)
}

func (dc *Controller) trySync(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	pods, err := dc.podsOf(pdb)
	if err != nil {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return err
	}
	if len(pods) == 0 {
		dc.recorder.Eventf(pdb, corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	expected, desired, unmanaged, err := dc.expectedPods(ctx, pdb, pods)
	if err != nil {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		return err
	}
	if len(unmanaged) > 0 {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)
	}
	now := dc.now()
	disrupted, recheckAt := dc.disruptedPods(pods, pdb, now)
	healthy := countHealthy(pods, disrupted, now)
	if err := dc.writeStatus(ctx, pdb, healthy, desired, expected, disrupted); err != nil {
		return err
	}
	if recheckAt != nil {
		dc.recheck.AddAfter(pdb.Namespace+"/"+pdb.Name, recheckAt.Sub(now))
	}
	return nil
}

// podsOf lists the pods the budget selects; an empty selector selects
// every pod of the namespace.
func (dc *Controller) podsOf(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil, err
	}
	return dc.pods.Pods(pdb.Namespace).List(sel)
}

// expectedPods returns expectedPods and desiredHealthy for the budget,
// and the pods without a controller when the count needed their scales.
func (dc *Controller) expectedPods(ctx context.Context, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, unmanaged []string, err error) {
	switch s := pdb.Spec; {
	case s.MaxUnavailable != nil:
		if expected, unmanaged, err = dc.expectedScale(ctx, pods); err != nil {
			return 0, 0, nil, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(s.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desired = max(expected-int32(maxUnavailable), 0)
	case s.MinAvailable != nil && s.MinAvailable.Type == intstr.Int:
		desired, expected = s.MinAvailable.IntVal, int32(len(pods))
	case s.MinAvailable != nil:
		if expected, unmanaged, err = dc.expectedScale(ctx, pods); err != nil {
			return 0, 0, nil, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(s.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desired = int32(minAvailable)
	}
	return expected, desired, unmanaged, nil
}

// expectedScale sums the scales of the controllers of pods, each
// controller once; it fails when a pod's controller cannot be found.
func (dc *Controller) expectedScale(ctx context.Context, pods []*corev1.Pod) (int32, []string, error) {
	scales := map[types.UID]int32{}
	var unmanaged []string
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if _, ok := scales[ref.UID]; ok {
			continue
		}
		uid, scale, found, err := dc.controllerScale(ctx, ref, pod.Namespace)
		if err != nil {
			return 0, nil, err
		}
		if !found {
			return 0, nil, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		scales[uid] = scale
	}
	var sum int32
	for _, n := range scales {
		sum += n
	}
	return sum, unmanaged, nil
}

// controllerScale finds the controller ref names and its scale, trying
// kube's finders in order: a ReplicationController, the Deployment of a
// ReplicaSet, a ReplicaSet no Deployment owns, a StatefulSet, and the
// scale of any other controller.
func (dc *Controller) controllerScale(ctx context.Context, ref *metav1.OwnerReference, ns string) (types.UID, int32, bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, err
	}
	if ref.Kind == "ReplicaSet" && (gv.Group == "apps" || gv.Group == "extensions") {
		rs, err := dc.rss.ReplicaSets(ns).Get(ref.Name)
		if err == nil && rs.UID == ref.UID {
			owner := metav1.GetControllerOf(rs)
			if owner == nil || owner.Kind != "Deployment" {
				return rs.UID, replicas(rs.Spec.Replicas), true, nil
			}
			ogv, err := schema.ParseGroupVersion(owner.APIVersion)
			if err != nil {
				return "", 0, false, err
			}
			if ogv.Group == "apps" || ogv.Group == "extensions" {
				d, err := dc.deployments.Deployments(ns).Get(owner.Name)
				if err == nil && d.UID == owner.UID {
					return d.UID, replicas(d.Spec.Replicas), true, nil
				}
			}
			// A ReplicaSet whose Deployment is gone counts by its own
			// scale, which kube reads last.
		}
	}
	return dc.scaleOf(ctx, ref, gv, ns)
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// scaleOf reads the scale of the controller ref names: from the caches
// for the workloads whose scale subresource kube serves, through the
// scale subresource, found by discovery, for any other kind. A
// controller that is not there, or another object of its name, is not
// found; a kind without a scale is an error.
func (dc *Controller) scaleOf(ctx context.Context, ref *metav1.OwnerReference, gv schema.GroupVersion, ns string) (types.UID, int32, bool, error) {
	var uid types.UID
	var n *int32
	switch gk := (schema.GroupKind{Group: gv.Group, Kind: ref.Kind}); gk {
	case schema.GroupKind{Kind: "ReplicationController"}:
		if o, err := dc.rcs.ReplicationControllers(ns).Get(ref.Name); err == nil {
			uid, n = o.UID, o.Spec.Replicas
		}
	case schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		if o, err := dc.rss.ReplicaSets(ns).Get(ref.Name); err == nil {
			uid, n = o.UID, o.Spec.Replicas
		}
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		if o, err := dc.deployments.Deployments(ns).Get(ref.Name); err == nil {
			uid, n = o.UID, o.Spec.Replicas
		}
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		if o, err := dc.sets.StatefulSets(ns).Get(ref.Name); err == nil {
			uid, n = o.UID, o.Spec.Replicas
		}
	default:
		return dc.scaleSubresource(ctx, ref, gv, ns)
	}
	if uid == "" || uid != ref.UID {
		return "", 0, false, nil
	}
	return uid, replicas(n), true, nil
}

// scaleSubresource reads a controller's scale subresource.
func (dc *Controller) scaleSubresource(ctx context.Context, ref *metav1.OwnerReference, gv schema.GroupVersion, ns string) (types.UID, int32, bool, error) {
	list, err := dc.client.Discovery().ServerResourcesForGroupVersion(gv.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return "", 0, false, err
	}
	resource, scaled := "", false
	if list != nil {
		for _, r := range list.APIResources {
			if r.Kind == ref.Kind && !strings.Contains(r.Name, "/") {
				resource = r.Name
			}
		}
		for _, r := range list.APIResources {
			if resource != "" && r.Name == resource+"/scale" && r.Kind == "Scale" {
				scaled = true
			}
		}
	}
	if resource == "" {
		return "", 0, false, fmt.Errorf("no matches for kind %q in version %q", ref.Kind, gv.String())
	}
	gr := schema.GroupResource{Group: gv.Group, Resource: resource}
	if !scaled {
		return "", 0, false, fmt.Errorf("%s does not implement the scale subresource", gr.String())
	}
	u, err := dc.dynamic.Resource(gv.WithResource(resource)).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{}, "scale")
	if apierrors.IsNotFound(err) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	if u.GetUID() != ref.UID {
		return "", 0, false, nil
	}
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return u.GetUID(), int32(n), true, nil
}

// countHealthy counts the ready pods that are neither being deleted nor
// recorded as disrupted.
func countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if t, ok := disrupted[pod.Name]; ok && t.Add(DeletionTimeout).After(now) {
			continue
		}
		if controllers.PodReady(pod) {
			n++
		}
	}
	return n
}

// disruptedPods keeps the budget's disruptedPods entries of pods still
// there and not yet being deleted, until they expire, and returns when
// the first kept one will.
func (dc *Controller) disruptedPods(pods []*corev1.Pod, pdb *policyv1.PodDisruptionBudget, now time.Time) (map[string]metav1.Time, *time.Time) {
	out := map[string]metav1.Time{}
	var recheck *time.Time
	if pdb.Status.DisruptedPods == nil {
		return out, nil
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if expires.Before(now) {
			dc.log.Info("pod was expected to be deleted but it was not", "pod", pod.Namespace+"/"+pod.Name, "evicted", at, "pdb", pdb.Name)
			// kube's message names the budget's namespace twice.
			dc.recorder.Eventf(pod, corev1.EventTypeWarning, "NotDeleted", "Pod was expected by PDB %s/%s to be deleted but it wasn't",
				pdb.Namespace, pdb.Namespace)
			continue
		}
		if recheck == nil || expires.Before(*recheck) {
			recheck = &expires
		}
		out[pod.Name] = at
	}
	return out, recheck
}

// failSafe allows no disruption, with a SyncFailed condition that says
// why.
func (dc *Controller) failSafe(ctx context.Context, pdb *policyv1.PodDisruptionBudget, cause error) error {
	p := pdb.DeepCopy()
	p.Status.DisruptionsAllowed = 0
	if p.Status.Conditions == nil {
		p.Status.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: policyv1.SyncFailedReason, Message: cause.Error(), ObservedGeneration: p.Status.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(dc.now())})
	_, err := dc.client.PolicyV1().PodDisruptionBudgets(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// writeStatus writes the computed status unless the budget has it
// already.
func (dc *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, healthy, desired, expected int32, disrupted map[string]metav1.Time) error {
	allowed := healthy - desired
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	st := &pdb.Status
	if st.CurrentHealthy == healthy && st.DesiredHealthy == desired && st.ExpectedPods == expected && st.DisruptionsAllowed == allowed &&
		apiequality.Semantic.DeepEqual(st.DisruptedPods, disrupted) && st.ObservedGeneration == pdb.Generation && pdbhelper.ConditionsAreUpToDate(pdb) {
		return nil
	}
	p := pdb.DeepCopy()
	p.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected,
		DisruptionsAllowed: allowed, DisruptedPods: disrupted, ObservedGeneration: pdb.Generation, Conditions: p.Status.Conditions}
	setDisruptionAllowed(p, dc.now())
	_, err := dc.client.PolicyV1().PodDisruptionBudgets(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// setDisruptionAllowed sets the DisruptionAllowed condition from
// status.disruptionsAllowed by component-helpers' rule, kube's. The helper
// dates a transition by the wall clock; the controller's clock dates it
// instead, so that a controller run on an injected clock writes that time.
func setDisruptionAllowed(pdb *policyv1.PodDisruptionBudget, now time.Time) {
	var was metav1.ConditionStatus
	if c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c != nil {
		was = c.Status
	}
	pdbhelper.UpdateDisruptionAllowedCondition(pdb)
	if c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c.Status != was {
		c.LastTransitionTime = metav1.NewTime(now)
	}
}

// staleDisruption reports whether a pod not being deleted carries a
// DisruptionTarget condition True that is not the kubelet's, and how long
// until that condition is stale.
func (dc *Controller) staleDisruption(pod *corev1.Pod) (bool, time.Duration) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, 0
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status != corev1.ConditionTrue || c.Reason == corev1.PodReasonTerminationByKubelet {
			return false, 0
		}
		return true, max(staleConditionTimeout-dc.now().Sub(c.LastTransitionTime.Time), 0)
	}
	return false, 0
}

// syncStalePod sets a stale DisruptionTarget condition to False.
func (dc *Controller) syncStalePod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := dc.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	stale, after := dc.staleDisruption(pod)
	if !stale {
		return nil
	}
	if after > 0 {
		dc.stalePods.AddAfter(key, after)
		return nil
	}
	p := pod.DeepCopy()
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == corev1.DisruptionTarget {
			// the condition observes the pod's generation, as kube's
			// writes do now that pods track it
			*c = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(dc.now()),
				ObservedGeneration: p.Generation}
		}
	}
	if _, err := dc.client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	dc.log.Info("reset stale DisruptionTarget condition to False", "pod", key)
	return nil
}
