// Package tainteviction is kube-controller-manager's taint eviction
// controller: it deletes the pods on a node with NoExecute taints they do
// not tolerate, at once, and those that tolerate every such taint for a
// limited time, once the shortest of those times has passed; a pod that
// tolerates them for ever stays (docs/kubernetes-behaviour.md, G.13).
//
// Before deleting a pod it marks it with the DisruptionTarget condition
// (reason DeletionByTaintManager), and it records a TaintManagerEviction
// event on the pod when it schedules a deletion ("Marking for deletion
// Pod NS/NAME") and when it cancels one ("Cancelling deletion of Pod
// NS/NAME"): the taints went, the pod moved, or its tolerations now last
// for ever.
//
// The identity it runs as needs: pods list, watch, get, delete and
// patch of pods/status; nodes list, watch; events create, patch.
package tainteviction

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubegate/kubegate/controllers"
)

// Name is the controller's name, and the source of its events.
const Name = "taint-eviction-controller"

// Descriptor runs the controller in the controller manager, as the node
// lifecycle controller's service account: kube gives this controller no
// role of its own.
var Descriptor = controllers.Descriptor{Name: Name, ServiceAccount: "node-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c)
}}

// workers is how many nodes and pods are looked at, and pods deleted, at
// once.
const workers = 8

// Queue keys: a node to look at, a pod to look at, a pod to delete now.
const (
	nodePrefix  = "node/"
	podPrefix   = "pod/"
	evictPrefix = "evict/"
)

// eviction is a deletion scheduled for one pod.
type eviction struct {
	created, fire time.Time
	timer         *time.Timer
}

// Controller deletes pods that do not tolerate their node's NoExecute
// taints.
type Controller struct {
	client   kubernetes.Interface
	log      *slog.Logger
	now      func() time.Time
	pods     cache.SharedIndexInformer
	podList  corelisters.PodLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder

	mu sync.Mutex
	// tainted holds the NoExecute taints of every node that has some.
	tainted map[string][]corev1.Taint
	// scheduled holds the pending deletions by pod namespace/name.
	scheduled map[string]*eviction
}

// New builds the controller from c's shared informers.
func New(c *controllers.Context) (*Controller, error) {
	podInf := c.Informers.Core().V1().Pods()
	nodeInf := c.Informers.Core().V1().Nodes()
	if err := controllers.AddPodNodeNameIndex(podInf.Informer()); err != nil {
		return nil, err
	}
	tc := &Controller{client: c.Client, log: c.Logger, now: c.Now, pods: podInf.Informer(), podList: podInf.Lister(),
		nodes: nodeInf.Lister(), queue: controllers.NewQueue(Name),
		synced:  []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
		tainted: map[string][]corev1.Taint{}, scheduled: map[string]*eviction{}}
	if tc.now == nil {
		tc.now = time.Now
	}
	onPod := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			tc.queue.Add(podPrefix + key)
		}
	}
	onNode := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			tc.queue.Add(nodePrefix + key)
		}
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod,
		UpdateFunc: func(old, cur any) {
			o, n := old.(*corev1.Pod), cur.(*corev1.Pod)
			if o.Spec.NodeName != n.Spec.NodeName || !equalTolerations(o.Spec.Tolerations, n.Spec.Tolerations) {
				onPod(cur)
			}
		},
		DeleteFunc: onPod,
	}); err != nil {
		return nil, err
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNode,
		UpdateFunc: func(old, cur any) {
			if !equalTaints(noExecute(old.(*corev1.Node).Spec.Taints), noExecute(cur.(*corev1.Node).Spec.Taints)) {
				onNode(cur)
			}
		},
		DeleteFunc: onNode,
	}); err != nil {
		return nil, err
	}
	return tc, nil
}

// Run works until ctx is done.
func (tc *Controller) Run(ctx context.Context) error {
	var stop func()
	tc.recorder, stop = controllers.NewRecorder(tc.client, Name)
	defer stop()
	defer tc.cancelAll()
	return controllers.RunWorkers(ctx, Name, tc.queue, workers, tc.log, tc.handle, tc.synced...)
}

func (tc *Controller) handle(ctx context.Context, key string) error {
	switch {
	case strings.HasPrefix(key, nodePrefix):
		return tc.syncNode(strings.TrimPrefix(key, nodePrefix))
	case strings.HasPrefix(key, podPrefix):
		return tc.syncPod(strings.TrimPrefix(key, podPrefix))
	case strings.HasPrefix(key, evictPrefix):
		return tc.evict(ctx, strings.TrimPrefix(key, evictPrefix))
	}
	return nil
}

// syncNode records the node's NoExecute taints and looks again at every
// pod on it.
func (tc *Controller) syncNode(name string) error {
	node, err := tc.nodes.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var taints []corev1.Taint
	if node != nil {
		taints = noExecute(node.Spec.Taints)
	}
	tc.mu.Lock()
	if len(taints) == 0 {
		delete(tc.tainted, name)
	} else {
		tc.tainted[name] = taints
	}
	tc.mu.Unlock()
	if node == nil {
		return nil
	}
	pods, err := controllers.PodsOnNode(tc.pods, name)
	if err != nil {
		return err
	}
	now := tc.now()
	for _, pod := range pods {
		tc.decide(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, pod.Spec.Tolerations, taints, now)
	}
	return nil
}

// syncPod looks at one pod against its node's taints.
func (tc *Controller) syncPod(key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	nn := types.NamespacedName{Namespace: ns, Name: name}
	pod, err := tc.podList.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		tc.cancel(nn, true)
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return nil
	}
	tc.mu.Lock()
	taints, ok := tc.tainted[pod.Spec.NodeName]
	tc.mu.Unlock()
	if !ok {
		tc.cancel(nn, true)
		return nil
	}
	tc.decide(nn, pod.Spec.Tolerations, taints, tc.now())
	return nil
}

// decide schedules, keeps or cancels the deletion of pod nn, which has
// tolerations, on a node with the NoExecute taints taints.
func (tc *Controller) decide(nn types.NamespacedName, tolerations []corev1.Toleration, taints []corev1.Taint, now time.Time) {
	if len(taints) == 0 {
		tc.cancel(nn, true)
		return
	}
	used, all := matching(taints, tolerations)
	if !all {
		tc.cancel(nn, true)
		tc.schedule(nn, now, now)
		return
	}
	wait := minToleration(used)
	if wait < 0 {
		tc.cancel(nn, true)
		return
	}
	// A deletion already pending since before now stays as it is, as in
	// kube: a toleration changed later neither hastens nor delays it.
	created := now
	tc.mu.Lock()
	e := tc.scheduled[nn.String()]
	tc.mu.Unlock()
	if e != nil {
		if e.created.Before(now) {
			return
		}
		created = e.created
		tc.cancel(nn, true)
	}
	tc.schedule(nn, created, now.Add(wait))
}

// schedule records a deletion of nn at fire and an event saying so.
func (tc *Controller) schedule(nn types.NamespacedName, created, fire time.Time) {
	key := nn.String()
	e := &eviction{created: created, fire: fire}
	tc.mu.Lock()
	tc.scheduled[key] = e
	e.timer = time.AfterFunc(max(fire.Sub(tc.now()), 0), func() { tc.queue.Add(evictPrefix + key) })
	tc.mu.Unlock()
	tc.event(nn, "Marking for deletion Pod %s")
}

// cancel drops the deletion scheduled for nn, if any, with an event when
// announce is set.
func (tc *Controller) cancel(nn types.NamespacedName, announce bool) {
	tc.mu.Lock()
	e := tc.scheduled[nn.String()]
	delete(tc.scheduled, nn.String())
	tc.mu.Unlock()
	if e == nil {
		return
	}
	e.timer.Stop()
	if announce {
		tc.event(nn, "Cancelling deletion of Pod %s")
	}
}

func (tc *Controller) cancelAll() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for k, e := range tc.scheduled {
		e.timer.Stop()
		delete(tc.scheduled, k)
	}
}

func (tc *Controller) event(nn types.NamespacedName, format string) {
	if tc.recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: nn.Namespace, Name: nn.Name}
	tc.recorder.Eventf(ref, corev1.EventTypeNormal, "TaintManagerEviction", format, nn.String())
}

// evict deletes the pod whose deletion came due, after marking it with
// the DisruptionTarget condition, unless the deletion was cancelled
// meanwhile.
func (tc *Controller) evict(ctx context.Context, key string) error {
	tc.mu.Lock()
	e := tc.scheduled[key]
	tc.mu.Unlock()
	if e == nil || tc.now().Before(e.fire) {
		return nil
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	tc.log.Info("deleting pod for its node's NoExecute taints", "pod", key)
	if err := tc.markAndDelete(ctx, ns, name); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	tc.mu.Lock()
	if tc.scheduled[key] == e {
		delete(tc.scheduled, key)
	}
	tc.mu.Unlock()
	return nil
}

// disruptionTarget is the condition a pod gets before its deletion.
var disruptionTarget = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
	Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint"}

func (tc *Controller) markAndDelete(ctx context.Context, ns, name string) error {
	pods := tc.client.CoreV1().Pods(ns)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !hasCondition(pod, disruptionTarget) {
		cond := disruptionTarget
		cond.LastTransitionTime = metav1.NewTime(tc.now())
		if pod.Generation > 0 {
			cond.ObservedGeneration = pod.Generation
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": pod.UID},
			"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
		})
		if err != nil {
			return err
		}
		if _, err := pods.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("mark pod %s/%s: %w", ns, name, err)
		}
	}
	return pods.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
}

func hasCondition(pod *corev1.Pod, want corev1.PodCondition) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == want.Type {
			return c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message
		}
	}
	return false
}

// matching returns, for every taint, the first toleration that tolerates
// it, and whether every taint has one. It is kube's controller's rule,
// from a helper of kube's own tree that component-helpers does not
// publish: component-helpers' TolerationsTolerateTaint and
// FindMatchingUntoleratedTaint say whether a taint is tolerated, not by
// which toleration, whose tolerationSeconds count here. Each toleration is
// judged by Toleration.ToleratesTaint, as those helpers judge it, with the
// Lt and Gt operators off as kube has them by default.
func matching(taints []corev1.Taint, tolerations []corev1.Toleration) ([]corev1.Toleration, bool) {
	used := make([]corev1.Toleration, 0, len(taints))
	logger := klog.Background()
	for i := range taints {
		found := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(logger, &taints[i], false) {
				used = append(used, tolerations[j])
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return used, true
}

// minToleration is the shortest tolerationSeconds of used: 0 when one is
// zero or negative, or there are none, and -1 (for ever) when none sets
// a limit. kube's controller keeps this rule to itself; component-helpers
// does not publish it.
func minToleration(used []corev1.Toleration) time.Duration {
	if len(used) == 0 {
		return 0
	}
	least := int64(math.MaxInt64)
	for _, t := range used {
		if t.TolerationSeconds == nil {
			continue
		}
		if *t.TolerationSeconds <= 0 {
			return 0
		}
		least = min(least, *t.TolerationSeconds)
	}
	if least == math.MaxInt64 {
		return -1
	}
	return time.Duration(least) * time.Second
}

func noExecute(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

func equalTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Effect != b[i].Effect {
			return false
		}
	}
	return true
}

func equalTolerations(a, b []corev1.Toleration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchToleration(&b[i]) || !equalSeconds(a[i].TolerationSeconds, b[i].TolerationSeconds) {
			return false
		}
	}
	return true
}

func equalSeconds(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
