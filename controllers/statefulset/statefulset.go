// Package statefulset is kube-controller-manager's StatefulSet controller
// for kubegate: pods with stable ordinal names SET-0 to SET-(N-1), made
// one at a time in order (OrderedReady, each once the one before is
// Running and Ready, removed highest first) or all at once (Parallel);
// a ControllerRevision per template; rolling updates from the highest
// ordinal down to the partition, or replacement only on deletion; and the
// status counts and revisions (docs/kubernetes-behaviour.md, G.5).
package statefulset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/ownership"
	"github.com/kubegate/kubegate/controllers/revision"
)

// Descriptor registers the controller as "statefulset".
var Descriptor = controllers.Descriptor{Name: "statefulset", ServiceAccount: "statefulset-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c), nil
}}

// workers is kube-controller-manager's default --concurrent-statefulset-syncs.
const workers = 5

var gvk = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// podName matches a stateful pod's name: its set's name and its ordinal.
var podName = regexp.MustCompile("(.*)-([0-9]+)$")

// Controller is the StatefulSet controller.
type Controller struct {
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time
	sets   appslisters.StatefulSetLister
	pods   corelisters.PodLister
	revs   appslisters.ControllerRevisionLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]

	claimsMu     sync.Mutex
	claimsKnown  bool // discovery has answered
	claimsServed bool
	// events records on StatefulSets as kube's statefulset-controller;
	// set by Run.
	events record.EventRecorder
}

// New builds the controller on c's shared informers.
func New(c *controllers.Context) *Controller {
	s := &Controller{client: c.Client, log: c.Logger, now: c.Now, queue: controllers.NewQueue("statefulset")}
	seti := c.Informers.Apps().V1().StatefulSets()
	podi := c.Informers.Core().V1().Pods()
	revi := c.Informers.Apps().V1().ControllerRevisions()
	s.sets, s.pods, s.revs = seti.Lister(), podi.Lister(), revi.Lister()
	s.synced = []cache.InformerSynced{seti.Informer().HasSynced, podi.Informer().HasSynced, revi.Informer().HasSynced}
	enqueue := func(obj any) { controllers.Enqueue(s.queue, obj) }
	_, _ = seti.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue})
	owned := func(obj any) {
		obj = controllers.Unwrap(obj)
		o, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
			if ref.Kind == gvk.Kind {
				s.queue.Add(o.GetNamespace() + "/" + ref.Name)
			}
			return
		}
		all, _ := s.sets.StatefulSets(o.GetNamespace()).List(labels.Everything())
		for _, set := range all {
			if sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(o.GetLabels())) {
				enqueue(set)
			}
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: owned, DeleteFunc: owned, UpdateFunc: func(old, cur any) {
		o, n := old.(metav1.Object), cur.(metav1.Object)
		if or, nr := metav1.GetControllerOfNoCopy(o), metav1.GetControllerOfNoCopy(n); or != nil && (nr == nil || or.UID != nr.UID) {
			owned(old)
		}
		owned(cur)
	}}
	_, _ = podi.Informer().AddEventHandler(handler)
	_, _ = revi.Informer().AddEventHandler(handler)
	return s
}

// Run works until ctx is done.
func (s *Controller) Run(ctx context.Context) error {
	var stop func()
	s.events, stop = controllers.NewRecorder(s.client, "statefulset-controller")
	defer stop()
	return controllers.RunWorkers(ctx, "statefulset", s.queue, workers, s.log, s.sync, s.synced...)
}

func (s *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	set, err := s.sets.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil // refused, as kube does
	}
	set = set.DeepCopy()
	get := func(ctx context.Context) (metav1.Object, error) {
		return s.client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	all, err := s.revs.ControllerRevisions(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	revs, err := revision.Claim(ctx, s.client, set, gvk, sel, all, get)
	if err != nil {
		return err
	}
	pods, err := s.claimPods(ctx, set, sel, get)
	if err != nil {
		return err
	}
	revision.SortByRevision(revs)
	current, update, collisions, err := s.revisions(ctx, set, revs)
	if err != nil {
		return err
	}
	status, err := s.update(ctx, set, current, update, collisions, pods)
	if status != nil {
		err = errors.Join(err, s.writeStatus(ctx, set, status))
	}
	err = errors.Join(err, s.truncateHistory(ctx, set, pods, revs, current, update))
	if err == nil && set.Spec.MinReadySeconds > 0 && status != nil && status.AvailableReplicas != status.ReadyReplicas {
		s.queue.AddAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second)
	}
	return err
}

// claimPods returns the pods set controls after claiming those its
// selector matches and whose names are SET-ORDINAL.
func (s *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector,
	get func(context.Context) (metav1.Object, error)) ([]*corev1.Pod, error) {
	all, err := s.pods.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var members []*corev1.Pod
	for _, p := range all {
		if parent, _ := parentAndOrdinal(p.Name); parent == set.Name {
			members = append(members, p)
		}
	}
	return ownership.Claim(ctx, set, gvk, sel, members, ownership.Recheck(set, get), ownership.PodPatcher(s.client))
}

func parentAndOrdinal(name string) (string, int) {
	m := podName.FindStringSubmatch(name)
	if len(m) < 3 {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return m[1], -1
	}
	return m[1], int(i)
}

func ordinal(pod *corev1.Pod) int {
	_, o := parentAndOrdinal(pod.Name)
	return o
}

func start(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicas(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// revisions returns the current revision (the status's, or the update
// revision when there is none) and the update revision of set's
// template, made or renumbered as needed, with the collision count.
func (s *Controller) revisions(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisions int32, err error) {
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	data, err := revision.TemplatePatch(set)
	if err != nil {
		return nil, nil, collisions, err
	}
	next := int64(1)
	if n := len(revs); n > 0 {
		next = revs[n-1].Revision + 1
	}
	var equal []*appsv1.ControllerRevision
	for _, r := range revs {
		if string(r.Data.Raw) == string(data) {
			equal = append(equal, r)
		}
	}
	switch {
	case len(equal) > 0 && equal[len(equal)-1] == revs[len(revs)-1]:
		update = revs[len(revs)-1]
	case len(equal) > 0:
		c := equal[len(equal)-1].DeepCopy()
		c.Revision = next
		if update, err = s.client.AppsV1().ControllerRevisions(set.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return nil, nil, collisions, err
		}
	default:
		if update, err = s.createRevision(ctx, set, data, next, &collisions); err != nil {
			return nil, nil, collisions, err
		}
	}
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision {
			current = r
			break
		}
	}
	if current == nil {
		current = update
	}
	return current, update, collisions, nil
}

// createRevision creates the revision SET-HASH, raising *collisions
// while a revision of that name holds other data.
func (s *Controller) createRevision(ctx context.Context, set *appsv1.StatefulSet, data []byte, number int64, collisions *int32) (*appsv1.ControllerRevision, error) {
	lbls := map[string]string{}
	for k, v := range set.Spec.Template.Labels {
		lbls[k] = v
	}
	annotations := map[string]string{}
	for k, v := range set.Annotations {
		annotations[k] = v
	}
	for range 100 {
		hash := revision.DataHash(data, collisions)
		lbls["controller.kubernetes.io/hash"] = hash
		cr := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: revision.Name(set.Name, hash), Namespace: set.Namespace, Labels: lbls, Annotations: annotations,
				OwnerReferences: []metav1.OwnerReference{ownership.ControllerRef(set, gvk)}},
			Data:     runtime.RawExtension{Raw: data},
			Revision: number,
		}
		created, err := s.client.AppsV1().ControllerRevisions(set.Namespace).Create(ctx, cr, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		existing, err := s.client.AppsV1().ControllerRevisions(set.Namespace).Get(ctx, cr.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if string(existing.Data.Raw) == string(data) {
			return existing, nil
		}
		*collisions++
	}
	return nil, fmt.Errorf("no free revision name for StatefulSet %s", set.Name)
}

// applyRevision returns set with the template of rev.
func applyRevision(set *appsv1.StatefulSet, rev *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	clone := set.DeepCopy()
	orig, err := json.Marshal(clone)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, rev.Data.Raw, appsv1.StatefulSet{})
	if err != nil {
		return nil, err
	}
	var restored appsv1.StatefulSet
	if err := json.Unmarshal(patched, &restored); err != nil {
		return nil, err
	}
	clone.Spec = restored.Spec
	return clone, nil
}

func created(pod *corev1.Pod) bool     { return pod.Status.Phase != "" }
func terminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }
func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

func runningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && controllers.PodReady(pod)
}

func unavailable(pod *corev1.Pod, minReady int32, now time.Time) bool {
	return !controllers.PodAvailable(pod, minReady, now) || terminating(pod)
}

func podRevision(pod *corev1.Pod) string { return pod.Labels[appsv1.StatefulSetRevisionLabel] }

// newPod is the pod of ordinal from set's template (that of rev): named
// SET-ORDINAL (keeping the generateName SET- that kube's pods carry
// too), with hostname and subdomain, the pod-name, pod-index and revision
// labels, and a volume per claim template when claims are served.
func (s *Controller) newPod(set *appsv1.StatefulSet, ord int, rev string) *corev1.Pod {
	pod := ownership.PodFromTemplate(&set.Spec.Template, set, gvk)
	pod.Name = fmt.Sprintf("%s-%d", set.Name, ord)
	setIdentity(set, pod)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
	if s.servesClaims() {
		setStorage(set, pod)
	}
	pod.Labels[appsv1.StatefulSetRevisionLabel] = rev
	return pod
}

func setIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	ord := ordinal(pod)
	pod.Name = fmt.Sprintf("%s-%d", set.Name, ord)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ord)
}

func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, ord := parentAndOrdinal(pod.Name)
	return ord >= 0 && parent == set.Name && pod.Namespace == set.Namespace && pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name
}

// claims are the claims of pod's ordinal, CLAIM-SET-ORDINAL, by template
// name, labelled with the set's selector labels.
func claims(set *appsv1.StatefulSet, pod *corev1.Pod) map[string]corev1.PersistentVolumeClaim {
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, t := range set.Spec.VolumeClaimTemplates {
		c := t.DeepCopy()
		c.Name = fmt.Sprintf("%s-%s-%d", t.Name, set.Name, ordinal(pod))
		c.Namespace = set.Namespace
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				c.Labels[k] = v
			}
		}
		out[t.Name] = *c
	}
	return out
}

func setStorage(set *appsv1.StatefulSet, pod *corev1.Pod) {
	cs := claims(set, pod)
	names := make([]string, 0, len(cs))
	for n := range cs {
		names = append(names, n)
	}
	slices.Sort(names)
	volumes := make([]corev1.Volume, 0, len(cs)+len(pod.Spec.Volumes))
	for _, n := range names {
		volumes = append(volumes, corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: cs[n].Name}}})
	}
	for _, v := range pod.Spec.Volumes {
		if _, ok := cs[v.Name]; !ok {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = volumes
}

// servesClaims reports whether the API server serves
// persistentvolumeclaims, asking discovery until it has answered once.
func (s *Controller) servesClaims() bool {
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	if !s.claimsKnown {
		list, err := s.client.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			return false
		}
		s.claimsKnown = true
		for _, r := range list.APIResources {
			s.claimsServed = s.claimsServed || r.Name == "persistentvolumeclaims"
		}
	}
	return s.claimsServed
}

// createClaims creates the claims of pod that do not exist yet.
func (s *Controller) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if len(set.Spec.VolumeClaimTemplates) == 0 || !s.servesClaims() {
		return nil
	}
	var errs []error
	for _, c := range claims(set, pod) {
		existing, err := s.client.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err := s.client.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx, &c, metav1.CreateOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("failed to create PVC %s: %w", c.Name, err))
			}
			if !apierrors.IsAlreadyExists(err) {
				s.claimEvent(set, pod, &c, err)
			}
		case err != nil:
			errs = append(errs, err)
			s.claimEvent(set, pod, &c, err)
		case existing.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("claim %s is being deleted", c.Name))
		}
	}
	return errors.Join(errs...)
}

func (s *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if err := s.createClaims(ctx, set, pod); err != nil {
		s.podEvent("create", set, pod, err)
		return err
	}
	_, err := s.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return err // a stale cache; the next sync sees the pod
	}
	s.podEvent("create", set, pod, err)
	return err
}

func (s *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	s.podEvent("delete", set, pod, err)
	return err
}

// podEvent records verb ("create", "update", "delete") done to pod, or
// failed with err, as kube's messages word it.
func (s *Controller) podEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, err error) {
	title := strings.ToUpper(verb[:1]) + verb[1:]
	if err == nil {
		s.events.Event(set, corev1.EventTypeNormal, "Successful"+title, fmt.Sprintf("%s Pod %s in StatefulSet %s successful", title, pod.Name, set.Name))
		return
	}
	s.events.Event(set, corev1.EventTypeWarning, "Failed"+title, fmt.Sprintf("%s Pod %s in StatefulSet %s failed error: %s", title, pod.Name, set.Name, err))
}

// claimEvent records the creation of claim for pod, or its failure.
func (s *Controller) claimEvent(set *appsv1.StatefulSet, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, err error) {
	if err == nil {
		s.events.Event(set, corev1.EventTypeNormal, "SuccessfulCreate",
			fmt.Sprintf("Create Claim %s Pod %s in StatefulSet %s success", claim.Name, pod.Name, set.Name))
		return
	}
	s.events.Event(set, corev1.EventTypeWarning, "FailedCreate",
		fmt.Sprintf("Create Claim %s for Pod %s in StatefulSet %s failed error: %s", claim.Name, pod.Name, set.Name, err))
}

// counts sets the replica counts of status from pods.
func counts(status *appsv1.StatefulSetStatus, minReady int32, current, update string, now time.Time, pods ...*corev1.Pod) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas, status.CurrentReplicas, status.UpdatedReplicas = 0, 0, 0, 0, 0
	for _, p := range pods {
		if p == nil {
			continue
		}
		if created(p) {
			status.Replicas++
		}
		if runningAndReady(p) {
			status.ReadyReplicas++
			if controllers.PodAvailable(p, minReady, now) {
				status.AvailableReplicas++
			}
		}
		if created(p) && !terminating(p) {
			if podRevision(p) == current {
				status.CurrentReplicas++
			}
			if podRevision(p) == update {
				status.UpdatedReplicas++
			}
		}
	}
}

// update brings set's pods towards its spec and returns the status that
// results.
func (s *Controller) update(ctx context.Context, set *appsv1.StatefulSet, current, update *appsv1.ControllerRevision, collisions int32, pods []*corev1.Pod) (*appsv1.StatefulSetStatus, error) {
	now := s.now()
	currentSet, err := applyRevision(set, current)
	if err != nil {
		return nil, err
	}
	updateSet, err := applyRevision(set, update)
	if err != nil {
		return nil, err
	}
	status := &appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, CurrentRevision: current.Name, UpdateRevision: update.Name,
		CollisionCount: &collisions, Conditions: slices.Clone(set.Status.Conditions)}
	minReady := set.Spec.MinReadySeconds
	counts(status, minReady, current.Name, update.Name, now, pods...)

	first, n := start(set), replicas(set)
	reps := make([]*corev1.Pod, n)
	var condemned []*corev1.Pod
	for _, p := range pods {
		o := ordinal(p)
		switch {
		case o >= first && o < first+n:
			reps[o-first] = p
		case o >= 0:
			condemned = append(condemned, p)
		}
	}
	partition := 0
	if ru := currentSet.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = int(*ru.Partition)
	}
	for i := range reps {
		if reps[i] != nil {
			continue
		}
		ord := first + i
		// Below the partition (or below the current count with no
		// rolling parameters) a new pod gets the current revision.
		rolling := currentSet.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType
		if rolling && currentSet.Spec.UpdateStrategy.RollingUpdate == nil && ord < first+int(currentSet.Status.CurrentReplicas) ||
			currentSet.Spec.UpdateStrategy.RollingUpdate != nil && ord < first+partition {
			reps[i] = s.newPod(currentSet, ord, current.Name)
		} else {
			reps[i] = s.newPod(updateSet, ord, update.Name)
		}
	}
	// Highest ordinal first.
	slices.SortFunc(condemned, func(a, b *corev1.Pod) int { return ordinal(b) - ordinal(a) })
	var firstUnhealthy *corev1.Pod
	for _, p := range reps {
		if unavailable(p, minReady, now) {
			firstUnhealthy = p
			break
		}
	}
	if firstUnhealthy == nil {
		for i := len(condemned) - 1; i >= 0; i-- {
			if unavailable(condemned[i], minReady, now) {
				firstUnhealthy = condemned[i]
				break
			}
		}
	}
	recount := func() {
		counts(status, minReady, current.Name, update.Name, now, append(slices.Clone(reps), condemned...)...)
	}
	if set.DeletionTimestamp != nil {
		return status, nil
	}
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement

	replica := func(i int) (bool, error) {
		p := reps[i]
		if terminal(p) {
			if p.DeletionTimestamp == nil {
				return true, s.deletePod(ctx, set, p)
			}
			return true, nil
		}
		if !created(p) {
			if err := s.createPod(ctx, set, p); err != nil {
				return true, err
			}
			if monotonic {
				return true, nil
			}
		}
		if created(p) && p.Status.Phase == corev1.PodPending {
			if err := s.createClaims(ctx, set, p); err != nil {
				return true, err
			}
		}
		if monotonic && (terminating(p) || !runningAndReady(p) || !controllers.PodAvailable(p, minReady, now)) {
			return true, nil
		}
		if identityMatches(set, p) {
			return false, nil
		}
		fixed := p.DeepCopy()
		setIdentity(updateSet, fixed)
		_, err := s.client.CoreV1().Pods(set.Namespace).Update(ctx, fixed, metav1.UpdateOptions{})
		s.podEvent("update", set, fixed, err)
		return false, err
	}
	if exit, err := runForAll(len(reps), replica, monotonic); exit || err != nil {
		recount()
		return status, err
	}
	condemn := func(i int) (bool, error) {
		p := condemned[i]
		if terminating(p) {
			return monotonic, nil
		}
		if monotonic && p != firstUnhealthy && (!runningAndReady(p) || !controllers.PodAvailable(p, minReady, now)) {
			return true, nil
		}
		return true, s.deletePod(ctx, set, p)
	}
	if exit, err := runForAll(len(condemned), condemn, monotonic); exit || err != nil {
		recount()
		return status, err
	}
	recount()
	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return status, nil
	}
	return status, s.rollingUpdate(ctx, set, reps, update.Name, status, now)
}

// rollingUpdate deletes out-of-date pods from the highest ordinal down to
// the partition, while fewer than maxUnavailable pods are unavailable;
// the next sync recreates each from the update revision.
func (s *Controller) rollingUpdate(ctx context.Context, set *appsv1.StatefulSet, reps []*corev1.Pod, update string, status *appsv1.StatefulSetStatus, now time.Time) error {
	minReady := set.Spec.MinReadySeconds
	partition, maxUnavailable := 0, 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			partition = int(*ru.Partition)
		}
		if ru.MaxUnavailable != nil {
			v, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxUnavailable, intstr.FromInt32(1)), len(reps), false)
			if err != nil {
				return err
			}
			maxUnavailable = max(v, 1)
		}
	}
	parallel := set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	unavailablePods, needingUpdate := 0, 0
	for _, p := range reps {
		if unavailable(p, minReady, now) {
			unavailablePods++
			if parallel && podRevision(p) != update && !terminating(p) {
				needingUpdate++
			}
		}
	}
	if unavailablePods >= maxUnavailable && needingUpdate == 0 {
		return nil
	}
	if parallel {
		for t := len(reps) - 1; t >= partition; t-- {
			p := reps[t]
			if podRevision(p) != update && !controllers.PodAvailable(p, minReady, now) && !terminating(p) {
				if err := s.deletePod(ctx, set, p); err != nil {
					return err
				}
				status.CurrentReplicas--
			}
		}
		budget := maxUnavailable - unavailablePods
		for t := len(reps) - 1; t >= partition && budget > 0; t-- {
			p := reps[t]
			if podRevision(p) != update && !unavailable(p, minReady, now) {
				if err := s.deletePod(ctx, set, p); err != nil {
					return err
				}
				budget--
				status.CurrentReplicas--
			}
		}
		return nil
	}
	toDelete := maxUnavailable - unavailablePods
	for t := len(reps) - 1; t >= partition && toDelete > 0; t-- {
		if p := reps[t]; podRevision(p) != update && !terminating(p) {
			if err := s.deletePod(ctx, set, p); err != nil {
				return err
			}
			toDelete--
			status.CurrentReplicas--
		}
	}
	return nil
}

// runForAll runs fn over 0..n-1: in order, stopping at the first that
// asks to, when monotonic; otherwise in batches that double from one,
// stopping at a batch with an error.
func runForAll(n int, fn func(i int) (bool, error), monotonic bool) (bool, error) {
	if monotonic {
		for i := range n {
			if exit, err := fn(i); exit || err != nil {
				return true, err
			}
		}
		return false, nil
	}
	for pos, size := 0, 1; pos < n; pos, size = pos+size, min(2*size, n-pos-size) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for i := pos; i < pos+size; i++ {
			wg.Go(func() {
				if _, err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			return true, errors.Join(errs...)
		}
	}
	return false, nil
}

// writeStatus completes an update that has reached every replica, then
// writes status when it differs from set's.
func (s *Controller) writeStatus(ctx context.Context, set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) error {
	n := int32(replicas(set))
	if status.UpdatedReplicas == n && status.ReadyReplicas == n && status.Replicas == n {
		status.CurrentReplicas = status.UpdatedReplicas
		status.CurrentRevision = status.UpdateRevision
	}
	cur := &set.Status
	if status.ObservedGeneration <= cur.ObservedGeneration && status.Replicas == cur.Replicas && status.CurrentReplicas == cur.CurrentReplicas &&
		status.ReadyReplicas == cur.ReadyReplicas && status.UpdatedReplicas == cur.UpdatedReplicas && status.CurrentRevision == cur.CurrentRevision &&
		status.AvailableReplicas == cur.AvailableReplicas && status.UpdateRevision == cur.UpdateRevision &&
		apiequality.Semantic.DeepEqual(cur.Conditions, status.Conditions) {
		return nil
	}
	to := set.DeepCopy()
	for i := 0; ; i++ {
		to.Status = *status
		_, err := s.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, to, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) || i >= 4 {
			return err
		}
		if to, err = s.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
}

// truncateHistory deletes the oldest revisions beyond
// revisionHistoryLimit that are neither current, nor the update, nor any
// pod's.
func (s *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs []*appsv1.ControllerRevision,
	current, update *appsv1.ControllerRevision) error {
	live := map[string]bool{}
	if current != nil {
		live[current.Name] = true
	}
	if update != nil {
		live[update.Name] = true
	}
	for _, p := range pods {
		live[podRevision(p)] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if limit < 0 || len(old) <= limit {
		return nil
	}
	for _, r := range old[:len(old)-limit] {
		if err := s.client.AppsV1().ControllerRevisions(set.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
