// Package daemonset is kube-controller-manager's DaemonSet controller for
// kubegate: one pod on every node a DaemonSet's pods fit (its node
// selector, required node affinity, and its taints against the pods'
// tolerations), following nodes as they come and go; a ControllerRevision
// per template, whose hash labels the pods; rolling updates bounded by
// maxUnavailable or maxSurge, or replacement only on deletion; and the
// status counts (docs/kubernetes-behaviour.md, G.4).
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/ownership"
	"github.com/kubegate/kubegate/controllers/revision"
)

// Descriptor registers the controller as "daemonset".
var Descriptor = controllers.Descriptor{Name: "daemonset", ServiceAccount: "daemon-set-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c), nil
}}

// workers is kube-controller-manager's default --concurrent-daemonset-syncs.
const workers = 2

// burst caps the creations or deletions of one sync, as kube's
// BurstReplicas does.
const burst = 250

// templateGenerationLabel carries the DaemonSet's template generation on
// its pods, as kube labels them.
const templateGenerationLabel = "pod-template-generation"

var gvk = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller is the DaemonSet controller.
type Controller struct {
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time
	dss    appslisters.DaemonSetLister
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	revs   appslisters.ControllerRevisionLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	expect ownership.Expectations
	// events records on DaemonSets as kube's daemonset-controller; set
	// by Run.
	events record.EventRecorder
}

// New builds the controller on c's shared informers.
func New(c *controllers.Context) *Controller {
	d := &Controller{client: c.Client, log: c.Logger, now: c.Now, queue: controllers.NewQueue("daemonset")}
	dsi := c.Informers.Apps().V1().DaemonSets()
	podi := c.Informers.Core().V1().Pods()
	nodei := c.Informers.Core().V1().Nodes()
	revi := c.Informers.Apps().V1().ControllerRevisions()
	d.dss, d.pods, d.nodes, d.revs = dsi.Lister(), podi.Lister(), nodei.Lister(), revi.Lister()
	d.synced = []cache.InformerSynced{dsi.Informer().HasSynced, podi.Informer().HasSynced, nodei.Informer().HasSynced, revi.Informer().HasSynced}
	enqueue := func(obj any) { controllers.Enqueue(d.queue, obj) }
	_, _ = dsi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue})
	_, _ = podi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { d.podChanged(obj, 1) },
		UpdateFunc: func(old, cur any) {
			if o, n := old.(*corev1.Pod), cur.(*corev1.Pod); o.ResourceVersion != n.ResourceVersion {
				if or, nr := metav1.GetControllerOfNoCopy(o), metav1.GetControllerOfNoCopy(n); or != nil && (nr == nil || or.UID != nr.UID) {
					d.podChanged(o, 0)
				}
				d.podChanged(n, 0)
			}
		},
		DeleteFunc: func(obj any) { d.podChanged(obj, -1) },
	})
	_, _ = nodei.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { d.enqueueAll() },
		UpdateFunc: func(old, cur any) {
			o, n := old.(*corev1.Node), cur.(*corev1.Node)
			if !apiequality.Semantic.DeepEqual(o.Labels, n.Labels) || !apiequality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				o.Spec.Unschedulable != n.Spec.Unschedulable {
				d.enqueueAll()
			}
		},
		DeleteFunc: func(any) { d.enqueueAll() },
	})
	_, _ = revi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    d.revisionChanged,
		UpdateFunc: func(_, cur any) { d.revisionChanged(cur) },
		DeleteFunc: d.revisionChanged,
	})
	return d
}

// Run works until ctx is done.
func (d *Controller) Run(ctx context.Context) error {
	var stop func()
	d.events, stop = controllers.NewRecorder(d.client, "daemonset-controller")
	defer stop()
	return controllers.RunWorkers(ctx, "daemonset", d.queue, workers, d.log, d.sync, d.synced...)
}

func (d *Controller) enqueueAll() {
	all, _ := d.dss.List(labels.Everything())
	for _, ds := range all {
		controllers.Enqueue(d.queue, ds)
	}
}

// podChanged enqueues the DaemonSet that controls a pod, recording a
// creation (delta 1) or deletion (-1) it expected; an orphan enqueues
// every DaemonSet whose selector matches it, which may adopt it.
func (d *Controller) podChanged(obj any, delta int) {
	obj = controllers.Unwrap(obj)
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if ref.Kind != gvk.Kind {
			return
		}
		ds, err := d.dss.DaemonSets(pod.Namespace).Get(ref.Name)
		if err != nil || ds.UID != ref.UID {
			return
		}
		key := pod.Namespace + "/" + ds.Name
		if delta != 0 {
			d.expect.Observed(key, delta > 0)
		}
		d.queue.Add(key)
		return
	}
	if delta < 0 {
		return
	}
	for _, ds := range d.matching(pod.Namespace, pod.Labels) {
		controllers.Enqueue(d.queue, ds)
	}
}

func (d *Controller) revisionChanged(obj any) {
	obj = controllers.Unwrap(obj)
	cr, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(cr); ref != nil {
		if ref.Kind == gvk.Kind {
			d.queue.Add(cr.Namespace + "/" + ref.Name)
		}
		return
	}
	for _, ds := range d.matching(cr.Namespace, cr.Labels) {
		controllers.Enqueue(d.queue, ds)
	}
}

// matching returns the DaemonSets of namespace whose selector matches set.
func (d *Controller) matching(namespace string, set map[string]string) []*appsv1.DaemonSet {
	all, _ := d.dss.DaemonSets(namespace).List(labels.Everything())
	var out []*appsv1.DaemonSet
	for _, ds := range all {
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(set)) {
			out = append(out, ds)
		}
	}
	return out
}

func (d *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ds, err := d.dss.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		d.expect.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	// A selector that selects everything is refused, as kube does.
	if ds.Spec.Selector == nil || len(ds.Spec.Selector.MatchLabels)+len(ds.Spec.Selector.MatchExpressions) == 0 {
		d.events.Event(ds, corev1.EventTypeWarning, "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	if ds.DeletionTimestamp != nil {
		return nil
	}
	nodes, err := d.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	cur, old, err := d.history(ctx, ds)
	if err != nil {
		return fmt.Errorf("revisions of DaemonSet %s: %w", key, err)
	}
	hash := cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if !d.expect.Satisfied(key) {
		return d.updateStatus(ctx, ds, nodes, hash, false)
	}
	err = d.manage(ctx, ds, nodes, hash)
	if err == nil && d.expect.Satisfied(key) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		err = d.rollingUpdate(ctx, ds, nodes, hash)
	}
	if err == nil {
		err = d.cleanupHistory(ctx, ds, old)
	}
	return errors.Join(err, d.updateStatus(ctx, ds, nodes, hash, true))
}

// fit is what decides which nodes a DaemonSet's pods belong on.
type fit struct {
	ds          *appsv1.DaemonSet
	tolerations []corev1.Toleration
	affinity    nodeaffinity.RequiredNodeAffinity
}

func newFit(ds *appsv1.DaemonSet) fit {
	spec := ds.Spec.Template.Spec.DeepCopy()
	addDaemonTolerations(spec)
	return fit{ds: ds, tolerations: spec.Tolerations,
		affinity: nodeaffinity.NewRequiredNodeAffinity(ds.Spec.Template.Spec.NodeSelector, ds.Spec.Template.Spec.Affinity)}
}

// check reports whether a daemon pod should run on node (shouldRun) and
// whether one already there may stay (shouldContinue): the node matches
// the template's node name, selector and required affinity, and its
// NoSchedule and NoExecute taints are tolerated; a pod may stay on a node
// whose untolerated taints are only NoSchedule.
func (f fit) check(node *corev1.Node) (shouldRun, shouldContinue bool) {
	if n := f.ds.Spec.Template.Spec.NodeName; n != "" && n != node.Name {
		return false, false
	}
	if ok, _ := f.affinity.Match(node); !ok {
		return false, false
	}
	logger := klog.Background()
	if _, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, f.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, false); !untolerated {
		return true, true
	}
	_, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, f.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return false, !untolerated
}

// addDaemonTolerations adds the tolerations kube gives every daemon pod:
// the not-ready and unreachable NoExecute taints, the pressure and
// unschedulable NoSchedule taints, and network-unavailable for a pod on
// the host's network.
func addDaemonTolerations(spec *corev1.PodSpec) {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	add := []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if spec.HostNetwork {
		add = append(add, exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	for _, t := range add {
		// One the template has for the same key, operator, value and
		// effect is replaced.
		i := slices.IndexFunc(spec.Tolerations, func(o corev1.Toleration) bool {
			return o.Key == t.Key && o.Operator == t.Operator && o.Value == t.Value && o.Effect == t.Effect
		})
		if i >= 0 {
			spec.Tolerations[i] = t
		} else {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
}

// daemonPods returns the pods ds controls after claiming, by the node
// each is for (its node name, or the node its required affinity names).
// Terminal pods being deleted are left out unless withGone.
func (d *Controller) daemonPods(ctx context.Context, ds *appsv1.DaemonSet, withGone bool) (map[string][]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, err
	}
	all, err := d.pods.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	fresh := ownership.Recheck(ds, func(ctx context.Context) (metav1.Object, error) {
		return d.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	})
	claimed, err := ownership.Claim(ctx, ds, gvk, sel, all, fresh, ownership.PodPatcher(d.client))
	if err != nil {
		return nil, err
	}
	out := map[string][]*corev1.Pod{}
	for _, pod := range claimed {
		if !withGone && terminal(pod) && pod.DeletionTimestamp != nil {
			continue
		}
		if node := targetNode(pod); node != "" {
			out[node] = append(out[node], pod)
		}
	}
	return out, nil
}

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// targetNode is the node a daemon pod is bound to, or the one its
// required node affinity names by metadata.name.
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// byAge orders a node's pods as kube keeps them: scheduled before
// pending, then oldest first.
func byAge(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		ap, bp := a.Status.Phase == corev1.PodPending, b.Status.Phase == corev1.PodPending
		if ap != bp {
			if bp {
				return -1
			}
			return 1
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
}

func templateGeneration(ds *appsv1.DaemonSet) (int64, bool) {
	v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseInt(v, 10, 64)
	return g, err == nil
}

// updated: the pod carries the current hash, or the current template
// generation.
func updated(pod *corev1.Pod, ds *appsv1.DaemonSet, hash string) bool {
	if g, ok := templateGeneration(ds); ok && pod.Labels[templateGenerationLabel] == strconv.FormatInt(g, 10) {
		return true
	}
	return hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
}

func scaled(v *intstr.IntOrString, total int) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil {
		return 0
	}
	return n
}

func maxSurge(ds *appsv1.DaemonSet, total int) int {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate == nil {
		return 0
	}
	return scaled(ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge, total)
}

func maxUnavailable(ds *appsv1.DaemonSet, total int) int {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate == nil {
		return 0
	}
	return scaled(ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable, total)
}

// manage creates the pods nodes lack and deletes those on nodes they no
// longer belong on, the failed and succeeded ones, and the extra ones.
func (d *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := d.daemonPods(ctx, ds, false)
	if err != nil {
		return err
	}
	f := newFit(ds)
	surge := maxSurge(ds, 1) > 0
	now := d.now()
	var create, remove []string
	known := map[string]bool{}
	for _, node := range nodes {
		known[node.Name] = true
		shouldRun, shouldContinue := f.check(node)
		pods, exists := byNode[node.Name]
		switch {
		case shouldRun && !exists:
			create = append(create, node.Name)
		case shouldContinue:
			var running []*corev1.Pod
			for _, pod := range pods {
				switch {
				case pod.DeletionTimestamp != nil:
				case pod.Status.Phase == corev1.PodFailed:
					d.events.Eventf(ds, corev1.EventTypeWarning, "FailedDaemonPod", "Found failed daemon pod %s/%s on node %s, will try to kill it",
						pod.Namespace, pod.Name, node.Name)
					remove = append(remove, pod.Name)
				case pod.Status.Phase == corev1.PodSucceeded:
					d.events.Eventf(ds, corev1.EventTypeNormal, "SucceededDaemonPod", "Found succeeded daemon pod %s/%s on node %s, will try to delete it",
						pod.Namespace, pod.Name, node.Name)
					remove = append(remove, pod.Name)
				default:
					running = append(running, pod)
				}
			}
			byAge(running)
			if !surge {
				for _, pod := range running[min(1, len(running)):] {
					remove = append(remove, pod.Name)
				}
				continue
			}
			if len(running) == 0 && shouldRun {
				create = append(create, node.Name)
				continue
			}
			// Surging: an old pod and a new one may both stay while the
			// new one is not yet available and the old one is ready.
			var oldestNew, oldestOld *corev1.Pod
			for _, pod := range running {
				isNew := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
				switch {
				case isNew && oldestNew == nil:
					oldestNew = pod
				case !isNew && oldestOld == nil:
					oldestOld = pod
				default:
					remove = append(remove, pod.Name)
				}
			}
			if oldestNew != nil && oldestOld != nil && (!controllers.PodReady(oldestOld) || controllers.PodAvailable(oldestNew, ds.Spec.MinReadySeconds, now)) {
				remove = append(remove, oldestOld.Name)
			}
		case exists:
			for _, pod := range pods {
				if pod.DeletionTimestamp == nil {
					remove = append(remove, pod.Name)
				}
			}
		}
	}
	// Pods for nodes that are gone, not yet bound.
	for node, pods := range byNode {
		if known[node] {
			continue
		}
		for _, pod := range pods {
			if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
				remove = append(remove, pod.Name)
			}
		}
	}
	return d.syncNodes(ctx, ds, remove, create, hash)
}

// syncNodes deletes the pods named in remove and creates a pod for each
// node in create, at most burst of each, recording what it expects to
// see. Creations go in batches that double from one, stopping at the
// first batch with a failure, as kube's slow start.
func (d *Controller) syncNodes(ctx context.Context, ds *appsv1.DaemonSet, remove, create []string, hash string) error {
	key := ds.Namespace + "/" + ds.Name
	create, remove = create[:min(len(create), burst)], remove[:min(len(remove), burst)]
	if len(create)+len(remove) == 0 {
		return nil
	}
	d.expect.Expect(key, len(create), len(remove))
	template := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&template.Spec)
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	if g, ok := templateGeneration(ds); ok {
		template.Labels[templateGenerationLabel] = strconv.FormatInt(g, 10)
	}
	if hash != "" {
		template.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for pos, size := 0, 1; pos < len(create); pos, size = pos+size, min(2*size, len(create)-pos-size) {
		var wg sync.WaitGroup
		before := len(errs)
		for _, node := range create[pos : pos+size] {
			wg.Go(func() {
				pod := ownership.PodFromTemplate(template, ds, gvk)
				pod.Spec.Affinity = nodeNameAffinity(pod.Spec.Affinity, node)
				made, err := d.client.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					d.expect.Observed(key, true)
					if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
						d.events.Eventf(ds, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
						fail(fmt.Errorf("create pod for node %s: %w", node, err))
					}
					return
				}
				d.events.Eventf(ds, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", made.Name)
			})
		}
		wg.Wait()
		if len(errs) > before {
			for range len(create) - pos - size {
				d.expect.Observed(key, true)
			}
			break
		}
	}
	var wg sync.WaitGroup
	for _, name := range remove {
		wg.Go(func() {
			if err := d.client.CoreV1().Pods(ds.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				d.expect.Observed(key, false)
				if !apierrors.IsNotFound(err) {
					d.events.Eventf(ds, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
					fail(fmt.Errorf("delete pod %s: %w", name, err))
				}
				return
			}
			d.events.Eventf(ds, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", name)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nodeNameAffinity makes a's required node affinity select node by
// metadata.name only, as kube does for daemon pods, which the default
// scheduler then binds.
func nodeNameAffinity(a *corev1.Affinity, node string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	return a
}

// updateStatus writes the status counts, and the observed generation
// when observed.
func (d *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string, observed bool) error {
	byNode, err := d.daemonPods(ctx, ds, false)
	if err != nil {
		return err
	}
	f := newFit(ds)
	now := d.now()
	var st appsv1.DaemonSetStatus
	for _, node := range nodes {
		shouldRun, _ := f.check(node)
		pods := byNode[node.Name]
		if !shouldRun {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		byAge(pods)
		pod := pods[0]
		if controllers.PodReady(pod) {
			st.NumberReady++
			if controllers.PodAvailable(pod, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
		if updated(pod, ds, hash) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	if ds.Spec.MinReadySeconds > 0 && st.NumberReady != st.NumberAvailable {
		d.queue.AddAfter(ds.Namespace+"/"+ds.Name, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	cur := ds.Status
	if cur.DesiredNumberScheduled == st.DesiredNumberScheduled && cur.CurrentNumberScheduled == st.CurrentNumberScheduled &&
		cur.NumberMisscheduled == st.NumberMisscheduled && cur.NumberReady == st.NumberReady &&
		cur.UpdatedNumberScheduled == st.UpdatedNumberScheduled && cur.NumberAvailable == st.NumberAvailable &&
		cur.NumberUnavailable == st.NumberUnavailable && cur.ObservedGeneration >= ds.Generation {
		return nil
	}
	to := ds.DeepCopy()
	for i := 0; ; i++ {
		if observed {
			to.Status.ObservedGeneration = ds.Generation
		}
		to.Status.DesiredNumberScheduled, to.Status.CurrentNumberScheduled = st.DesiredNumberScheduled, st.CurrentNumberScheduled
		to.Status.NumberMisscheduled, to.Status.NumberReady = st.NumberMisscheduled, st.NumberReady
		to.Status.UpdatedNumberScheduled, to.Status.NumberAvailable = st.UpdatedNumberScheduled, st.NumberAvailable
		to.Status.NumberUnavailable = st.NumberUnavailable
		_, err := d.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, to, metav1.UpdateOptions{})
		if err == nil || i >= 1 {
			return err
		}
		if to, err = d.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
}

// rollingUpdate replaces out-of-date pods: with no surge, by deleting old
// pods while no more than maxUnavailable are unavailable (manage then
// creates their replacements); with surge, by creating new pods next to
// old ones on at most maxSurge nodes and deleting each old pod once its
// replacement is available.
func (d *Controller) rollingUpdate(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := d.daemonPods(ctx, ds, false)
	if err != nil {
		return err
	}
	f := newFit(ds)
	desired := 0
	shouldRun := map[string]bool{}
	for _, node := range nodes {
		if run, _ := f.check(node); run {
			desired++
			shouldRun[node.Name] = true
			if _, ok := byNode[node.Name]; !ok {
				byNode[node.Name] = nil
			}
		}
	}
	surge, unavailable := maxSurge(ds, desired), maxUnavailable(ds, desired)
	if desired > 0 && surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	now := d.now()
	avail := func(p *corev1.Pod) bool { return controllers.PodAvailable(p, ds.Spec.MinReadySeconds, now) }
	nodeNames := make([]string, 0, len(byNode))
	for n := range byNode {
		nodeNames = append(nodeNames, n)
	}
	slices.Sort(nodeNames)
	if surge == 0 {
		numUnavailable := 0
		var allowed, candidates []string
		for _, n := range nodeNames {
			newPod, oldPod, ok := splitPods(ds, byNode[n], hash)
			switch {
			case !ok, oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
				numUnavailable++
			case newPod != nil:
				if !avail(newPod) {
					numUnavailable++
				}
			case !avail(oldPod):
				allowed = append(allowed, oldPod.Name)
				numUnavailable++
			case numUnavailable < unavailable:
				candidates = append(candidates, oldPod.Name)
			}
		}
		remaining := min(max(unavailable-numUnavailable, 0), len(candidates))
		return d.syncNodes(ctx, ds, append(allowed, candidates[:remaining]...), nil, hash)
	}
	var remove, shouldNotRun, candidates, allowed []string
	numSurge, numAvailable := 0, 0
	for _, n := range nodeNames {
		newPod, oldPod, ok := splitPods(ds, byNode[n], hash)
		if !ok {
			numSurge++
			continue
		}
		if oldPod != nil && avail(oldPod) || oldPod == nil && newPod != nil && avail(newPod) {
			numAvailable++
		}
		switch {
		case oldPod == nil:
		case newPod == nil:
			switch {
			case !avail(oldPod):
				if !shouldRun[n] {
					remove = append(remove, oldPod.Name)
					continue
				}
				allowed = append(allowed, n)
			case !shouldRun[n]:
				shouldNotRun = append(shouldNotRun, oldPod.Name)
			case numSurge < surge:
				candidates = append(candidates, n)
			}
		default:
			if !avail(newPod) {
				numSurge++
				continue
			}
			remove = append(remove, oldPod.Name)
		}
	}
	if extra := min(numAvailable-desired, len(shouldNotRun)); extra > 0 {
		remove = append(remove, shouldNotRun[:extra]...)
	}
	remaining := min(max(surge-numSurge, 0), len(candidates))
	return d.syncNodes(ctx, ds, remove, append(allowed, candidates[:remaining]...), hash)
}

// splitPods finds a node's up-to-date and out-of-date pod, ignoring those
// being deleted; ok is false when there is more than one of either.
func splitPods(ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if updated(pod, ds, hash) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = pod
		}
	}
	return newPod, oldPod, true
}

// history returns the revision of ds's current template, making it if
// there is none, and the others it controls. An older revision of the
// same template is renumbered as the newest.
func (d *Controller) history(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.ControllerRevision, []*appsv1.ControllerRevision, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, nil, err
	}
	all, err := d.revs.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	revs, err := revision.Claim(ctx, d.client, ds, gvk, sel, all, func(ctx context.Context) (metav1.Object, error) {
		return d.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, nil, err
	}
	data, err := revision.TemplatePatch(ds)
	if err != nil {
		return nil, nil, err
	}
	var current, old []*appsv1.ControllerRevision
	for _, cr := range revs {
		if _, ok := cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; !ok {
			c := cr.DeepCopy()
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = c.Name
			if cr, err = d.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
				return nil, nil, err
			}
		}
		if string(cr.Data.Raw) == string(data) {
			current = append(current, cr)
		} else {
			old = append(old, cr)
		}
	}
	next := revision.Max(old) + 1
	if len(current) == 0 {
		cur, err := d.snapshot(ctx, ds, data, next)
		return cur, old, err
	}
	cur, err := d.dedup(ctx, ds, current)
	if err != nil {
		return nil, nil, err
	}
	if cur.Revision < next {
		c := cur.DeepCopy()
		c.Revision = next
		if cur, err = d.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return nil, nil, err
		}
	}
	return cur, old, nil
}

// dedup keeps the newest of several revisions of the current template,
// relabels pods of the others with its hash, and deletes the others.
func (d *Controller) dedup(ctx context.Context, ds *appsv1.DaemonSet, current []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	keep := current[0]
	for _, cr := range current[1:] {
		if cr.Revision >= keep.Revision {
			keep = cr
		}
	}
	if len(current) == 1 {
		return keep, nil
	}
	hash := keep.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	byNode, err := d.daemonPods(ctx, ds, true)
	if err != nil {
		return nil, err
	}
	for _, pods := range byNode {
		for _, pod := range pods {
			if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
				continue
			}
			body := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, appsv1.DefaultDaemonSetUniqueLabelKey, hash)
			if _, err := d.client.CoreV1().Pods(ds.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
				return nil, err
			}
		}
	}
	for _, cr := range current {
		if cr.Name != keep.Name {
			if err := d.client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
		}
	}
	return keep, nil
}

// snapshot creates the revision DS-HASH of ds's template. A revision of
// that name with other data is a hash collision: the collision count is
// raised and the sync retried with the new hash.
func (d *Controller) snapshot(ctx context.Context, ds *appsv1.DaemonSet, data []byte, number int64) (*appsv1.ControllerRevision, error) {
	hash := revision.TemplateHash(&ds.Spec.Template, ds.Status.CollisionCount)
	lbls := map[string]string{}
	for k, v := range ds.Spec.Template.Labels {
		lbls[k] = v
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: revision.Name(ds.Name, hash), Namespace: ds.Namespace, Labels: lbls,
			Annotations: ds.Annotations, OwnerReferences: []metav1.OwnerReference{ownership.ControllerRef(ds, gvk)}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
	created, err := d.client.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, cr, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	existing, getErr := d.client.AppsV1().ControllerRevisions(ds.Namespace).Get(ctx, cr.Name, metav1.GetOptions{})
	if getErr != nil {
		return nil, getErr
	}
	if string(existing.Data.Raw) == string(data) {
		return existing, nil
	}
	fresh, getErr := d.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if getErr != nil {
		return nil, getErr
	}
	if !apiequality.Semantic.DeepEqual(fresh.Status.CollisionCount, ds.Status.CollisionCount) {
		return nil, fmt.Errorf("stale collision count of DaemonSet %s; retrying", ds.Name)
	}
	n := int32(1)
	if fresh.Status.CollisionCount != nil {
		n = *fresh.Status.CollisionCount + 1
	}
	fresh.Status.CollisionCount = &n
	if _, err := d.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	return nil, err
}

// cleanupHistory deletes the oldest revisions beyond revisionHistoryLimit
// that no pod still carries.
func (d *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	toKill := len(old) - limit
	if toKill <= 0 {
		return nil
	}
	byNode, err := d.daemonPods(ctx, ds, true)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, pods := range byNode {
		for _, pod := range pods {
			if h := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
				live[h] = true
			}
		}
	}
	revision.SortByRevision(old)
	for _, cr := range old {
		if toKill <= 0 {
			break
		}
		if live[cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		if err := d.client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		toKill--
	}
	return nil
}
