// Package podgc is kube-controller-manager's pod garbage collector
// (docs/kubernetes-behaviour.md G.22). Every GCPeriod (kube's 20 seconds)
// it force-deletes (grace period 0):
//   - the oldest terminated pods (phase neither Pending, Running nor
//     Unknown) above TerminatedPodThreshold (--terminated-pod-gc-threshold,
//     12500; 0 turns this off), evicted ones first, then by creation time
//     and name;
//   - terminating pods on a node that is not Ready and has the
//     node.kubernetes.io/out-of-service taint;
//   - pods bound to a node that no longer exists, once the node has been
//     missing from the cache for the quarantine (40 seconds) and the API
//     server answers NotFound for it; these get the DisruptionTarget
//     condition, reason DeletionByPodGC, message "PodGC: node no longer
//     exists";
//   - terminating pods that were never scheduled.
//
// A pod not yet finished is first marked Failed (with the condition,
// when there is one) by a strategic merge patch of its status that names
// its UID, so that a pod of the same name made since is left alone.
//
// The identity it runs as needs: pods list, watch, delete; pods/status
// patch; nodes get, list, watch.
package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegate/kubegate/controllers"
)

// Descriptor runs the collector in the controller manager, as kube's
// "pod-garbage-collector" controller.
var Descriptor = controllers.Descriptor{Name: "pod-garbage-collector", ServiceAccount: "pod-garbage-collector", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c, Options{})
}}

// Defaults of Options, kube-controller-manager's.
const (
	// DefaultTerminatedPodThreshold is --terminated-pod-gc-threshold.
	DefaultTerminatedPodThreshold = 12500
	// DefaultGCPeriod is how often kube's collector looks at the pods.
	DefaultGCPeriod = 20 * time.Second
	// DefaultQuarantine is how long a node must have been missing before
	// its pods are deleted.
	DefaultQuarantine = 40 * time.Second
)

// Options configure a Collector.
type Options struct {
	// TerminatedPodThreshold is how many terminated pods are kept; 0
	// means DefaultTerminatedPodThreshold and a negative value keeps
	// them all.
	TerminatedPodThreshold int
	// GCPeriod is how often the pods are looked at; 0 means
	// DefaultGCPeriod.
	GCPeriod time.Duration
	// Quarantine is how long a node is missing before its pods go; 0
	// means DefaultQuarantine.
	Quarantine time.Duration
}

// The DisruptionTarget condition the collector gives the pods of a
// deleted node.
const (
	ReasonDeletionByPodGC = "DeletionByPodGC"
	MessageNodeGone       = "PodGC: node no longer exists"
)

// Collector is the pod garbage collector.
type Collector struct {
	client      kubernetes.Interface
	log         *slog.Logger
	now         func() time.Time
	opts        Options
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	synced      []cache.InformerSynced
	missingFrom map[string]time.Time // nodes missing from the cache, since when
}

// New builds the collector from c.
func New(c *controllers.Context, o Options) (*Collector, error) {
	if o.TerminatedPodThreshold == 0 {
		o.TerminatedPodThreshold = DefaultTerminatedPodThreshold
	}
	if o.GCPeriod <= 0 {
		o.GCPeriod = DefaultGCPeriod
	}
	if o.Quarantine <= 0 {
		o.Quarantine = DefaultQuarantine
	}
	gc := &Collector{client: c.Client, log: c.Logger, now: c.Now, opts: o, missingFrom: map[string]time.Time{}}
	if gc.now == nil {
		gc.now = time.Now
	}
	if gc.log == nil {
		gc.log = slog.Default()
	}
	pi, ni := c.Informers.Core().V1().Pods(), c.Informers.Core().V1().Nodes()
	gc.pods, gc.nodes = pi.Lister(), ni.Lister()
	gc.synced = []cache.InformerSynced{pi.Informer().HasSynced, ni.Informer().HasSynced}
	return gc, nil
}

// Run collects until ctx is done.
func (gc *Collector) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), gc.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errNotSynced
	}
	wait.UntilWithContext(ctx, gc.collect, gc.opts.GCPeriod)
	return nil
}

var errNotSynced = errors.New("pod-garbage-collector: the caches did not sync")

// collect is one pass over the pods.
func (gc *Collector) collect(ctx context.Context) {
	pods, err := gc.pods.List(labels.Everything())
	if err != nil {
		return
	}
	nodes, err := gc.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	if gc.opts.TerminatedPodThreshold > 0 {
		gc.terminated(ctx, pods)
	}
	gc.outOfService(ctx, pods)
	gc.orphaned(ctx, pods, nodes)
	gc.unscheduledTerminating(ctx, pods)
}

func terminated(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodPending, corev1.PodRunning, corev1.PodUnknown:
		return false
	}
	return true
}

// terminated deletes the oldest terminated pods above the threshold.
func (gc *Collector) terminated(ctx context.Context, pods []*corev1.Pod) {
	var done []*corev1.Pod
	for _, p := range pods {
		if terminated(p) {
			done = append(done, p)
		}
	}
	n := len(done) - gc.opts.TerminatedPodThreshold
	if n <= 0 {
		return
	}
	gc.log.Info("deleting terminated pods above the threshold", "count", n, "threshold", gc.opts.TerminatedPodThreshold)
	slices.SortFunc(done, byEvictionAndAge)
	gc.deleteAll(ctx, done[:n], nil, "terminated pod")
}

// outOfService deletes the terminating pods of nodes that are not Ready
// and are tainted out of service.
func (gc *Collector) outOfService(ctx context.Context, pods []*corev1.Pod) {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil || p.Spec.NodeName == "" {
			continue
		}
		n, err := gc.nodes.Get(p.Spec.NodeName)
		if err != nil {
			continue
		}
		if !nodeReady(n) && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService }) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, byEvictionAndAge)
	gc.deleteAll(ctx, out, nil, "terminating pod on an out-of-service node")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// orphaned deletes the pods of nodes missing for the quarantine that the
// API server no longer has.
func (gc *Collector) orphaned(ctx context.Context, pods []*corev1.Pod, nodes []*corev1.Node) {
	existing := sets.New[string]()
	for _, n := range nodes {
		existing.Insert(n.Name)
	}
	now := gc.now()
	for _, p := range pods {
		if p.Spec.NodeName != "" && !existing.Has(p.Spec.NodeName) {
			if _, ok := gc.missingFrom[p.Spec.NodeName]; !ok {
				gc.missingFrom[p.Spec.NodeName] = now
			}
		}
	}
	gone := sets.New[string]()
	for name, since := range gc.missingFrom {
		if now.Sub(since) < gc.opts.Quarantine {
			continue
		}
		delete(gc.missingFrom, name)
		if existing.Has(name) {
			continue
		}
		_, err := gc.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone.Insert(name)
		case err != nil:
			gc.log.Warn("reading a node missing from the cache", "node", name, "err", err)
		}
	}
	var orphans []*corev1.Pod
	for _, p := range pods {
		if gone.Has(p.Spec.NodeName) {
			orphans = append(orphans, p)
		}
	}
	gc.deleteAll(ctx, orphans, &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: ReasonDeletionByPodGC, Message: MessageNodeGone}, "pod of a deleted node")
}

// unscheduledTerminating deletes the terminating pods never bound to a
// node, which no kubelet will ever finish.
func (gc *Collector) unscheduledTerminating(ctx context.Context, pods []*corev1.Pod) {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	gc.deleteAll(ctx, out, nil, "unscheduled terminating pod")
}

// byEvictionAndAge orders evicted pods first, then the oldest, then by
// name.
func byEvictionAndAge(a, b *corev1.Pod) int {
	ae, be := evicted(a), evicted(b)
	switch {
	case ae && !be:
		return -1
	case be && !ae:
		return 1
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func evicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
}

// deleteAll marks each pod failed and deletes it, at once for all.
func (gc *Collector) deleteAll(ctx context.Context, pods []*corev1.Pod, cond *corev1.PodCondition, what string) {
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Go(func() {
			if err := gc.failAndDelete(ctx, p, cond); err != nil && !apierrors.IsNotFound(err) {
				gc.log.Warn("deleting "+what, "pod", p.Namespace+"/"+p.Name, "err", err)
				return
			}
			gc.log.Info("force-deleted "+what, "pod", p.Namespace+"/"+p.Name)
		})
	}
	wg.Wait()
}

// failAndDelete marks a pod that has not finished Failed, with cond when
// given, and deletes it with a grace period of 0.
func (gc *Collector) failAndDelete(ctx context.Context, p *corev1.Pod, cond *corev1.PodCondition) error {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		status := p.Status.DeepCopy()
		status.Phase = corev1.PodFailed
		status.ObservedGeneration = p.Generation
		if cond != nil {
			setCondition(status, *cond, p.Generation, gc.now())
		}
		if err := gc.patchStatus(ctx, p, status); err != nil {
			return err
		}
	}
	return gc.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
}

// setCondition puts c in status, keeping the transition time of a
// condition of its type whose status it does not change.
func setCondition(status *corev1.PodStatus, c corev1.PodCondition, generation int64, now time.Time) {
	c.ObservedGeneration = generation
	c.LastTransitionTime = metav1.NewTime(now)
	for i, old := range status.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

// patchStatus patches p's status to status by a strategic merge patch
// carrying p's UID as a precondition.
func (gc *Collector) patchStatus(ctx context.Context, p *corev1.Pod, status *corev1.PodStatus) error {
	oldJSON, err := json.Marshal(corev1.Pod{Status: p.Status})
	if err != nil {
		return err
	}
	newJSON, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: p.UID}, Status: *status})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Pod{})
	if err != nil {
		return err
	}
	_, err = gc.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
