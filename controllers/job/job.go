// Package job is kube-controller-manager's Job controller: it runs a
// Job's pods until enough of them succeed, or too many fail, or it runs
// out of time (docs/kubernetes-behaviour.md, G.6).
//
// For each Job it claims the pods its selector matches, creates pods from
// the template up to parallelism (and no more than the completions left),
// each with the batch.kubernetes.io/job-tracking finalizer, and counts
// finished pods into the Job's status as kube does: a finished pod's UID
// goes first into status.uncountedTerminatedPods, then its finalizer is
// removed, then it moves to the succeeded or failed count. Indexed Jobs
// give each pod a completion index (annotation, label, hostname, the
// JOB_COMPLETION_INDEX variable, a name JOB-INDEX-xxxxx) and track the
// succeeded ones in status.completedIndexes. Failed pods are replaced
// after kube's backoff; past backoffLimit or activeDeadlineSeconds the
// Job gets FailureTarget, its remaining pods are deleted, and once none
// is left it gets Failed. On enough successes it gets SuccessCriteriaMet,
// then Complete with completionTime. A suspended Job's pods are deleted.
//
// Not done: podFailurePolicy, successPolicy, backoffLimitPerIndex and
// maxFailedIndexes (such Jobs run as if they had none),
// podReplacementPolicy Failed, managedBy and metrics.
//
// The identity it runs as needs: jobs list, watch, get; jobs/status
// update; pods list, watch, create, delete, patch.
package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/ownership"
)

// Descriptor runs the controller in the controller manager, as kube's
// "job" controller.
var Descriptor = controllers.Descriptor{Name: "job", ServiceAccount: "job-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c, Options{})
}}

// Kube's values.
const (
	// DefaultWorkers is kube-controller-manager's --concurrent-job-syncs.
	DefaultWorkers = 5
	// DefaultBackoff is the delay before a failed pod is replaced, doubled
	// for each further failure since the last success.
	DefaultBackoff = 10 * time.Second
	// DefaultMaxBackoff caps it.
	DefaultMaxBackoff = 10 * time.Minute
	// maxUncounted bounds status.uncountedTerminatedPods per sync.
	maxUncounted = 500
	// maxCreateDelete bounds the pods created or deleted per sync.
	maxCreateDelete = 500

	indexEnv = "JOB_COMPLETION_INDEX"
)

var gvk = batchv1.SchemeGroupVersion.WithKind("Job")

// Options tune the controller; zero values mean kube's.
type Options struct {
	Workers int
	// Backoff and MaxBackoff are the failed-pod replacement delays.
	Backoff, MaxBackoff time.Duration
}

// Controller is the Job controller.
type Controller struct {
	client  kubernetes.Interface
	log     *slog.Logger
	now     func() time.Time
	opts    Options
	jobs    batchlisters.JobLister
	pods    corelisters.PodLister
	synced  []cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	orphans workqueue.TypedRateLimitingInterface[string]

	expect      ownership.Expectations
	recorder    record.EventRecorder
	startEvents func() (stop func())

	mu        sync.Mutex
	rmPending map[string]map[types.UID]bool // per Job, pods whose finalizer removal is not yet seen
	backoff   map[string]backoffRecord      // per Job
}

// backoffRecord is how many pods failed since the last success, and when
// the last of them did.
type backoffRecord struct {
	failures int
	last     time.Time
}

// New builds the controller from c.
func New(c *controllers.Context, o Options) (*Controller, error) {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	jc := &Controller{client: c.Client, log: c.Logger, now: now, opts: o,
		queue: controllers.NewQueue("job"), orphans: controllers.NewQueue("job-orphan-pods"),
		rmPending: map[string]map[types.UID]bool{}, backoff: map[string]backoffRecord{}}
	if jc.log == nil {
		jc.log = slog.Default()
	}
	jc.recorder, jc.startEvents = controllers.NewLazyRecorder(jc.client, "job-controller")
	ji := c.Informers.Batch().V1().Jobs()
	pi := c.Informers.Core().V1().Pods()
	jc.jobs, jc.pods = ji.Lister(), pi.Lister()
	jc.synced = []cache.InformerSynced{ji.Informer().HasSynced, pi.Informer().HasSynced}
	if _, err := ji.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { controllers.Enqueue(jc.queue, obj) },
		UpdateFunc: func(_, obj any) { controllers.Enqueue(jc.queue, obj) },
		DeleteFunc: jc.deleteJob,
	}); err != nil {
		return nil, err
	}
	if _, err := pi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { jc.podEvent(obj, nil, false) },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*corev1.Pod); ok {
				jc.podEvent(obj, o, false)
			}
		},
		DeleteFunc: func(obj any) { jc.podEvent(obj, nil, true) },
	}); err != nil {
		return nil, err
	}
	return jc, nil
}

// Run works until ctx is done.
func (jc *Controller) Run(ctx context.Context) error {
	defer jc.startEvents()()
	go func() {
		_ = controllers.RunWorkers(ctx, "job-orphan-pods", jc.orphans, 1, jc.log, jc.syncOrphan, jc.synced...)
	}()
	return controllers.RunWorkers(ctx, "job", jc.queue, jc.opts.Workers, jc.log, jc.sync, jc.synced...)
}

func (jc *Controller) deleteJob(obj any) {
	controllers.Enqueue(jc.queue, obj)
	obj = controllers.Unwrap(obj)
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	pods, _ := jc.pods.Pods(j.Namespace).List(labels.Everything())
	for _, p := range pods {
		if metav1.IsControlledBy(p, j) && hasFinalizer(p) {
			controllers.Enqueue(jc.orphans, p)
		}
	}
}

// podEvent notes a pod's add (old nil), update or delete: the
// expectations and finalizer removals of its Job, which is synced. A pod
// with the finalizer and no Job to count it goes to the orphan queue.
func (jc *Controller) podEvent(obj any, old *corev1.Pod, deleted bool) {
	obj = controllers.Unwrap(obj)
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(p)
	var j *batchv1.Job
	if ref != nil && ref.Kind == gvk.Kind && ref.APIVersion == gvk.GroupVersion().String() {
		if got, err := jc.jobs.Jobs(p.Namespace).Get(ref.Name); err == nil && got.UID == ref.UID {
			j = got
		}
	}
	if j == nil {
		if hasFinalizer(p) && !deleted {
			controllers.Enqueue(jc.orphans, p)
		}
		if old != nil {
			// A pod released by its Job may be adopted by another.
			jc.enqueueMatching(p)
		}
		return
	}
	key := p.Namespace + "/" + j.Name
	if deleted || !hasFinalizer(p) {
		jc.mu.Lock()
		delete(jc.rmPending[key], p.UID)
		jc.mu.Unlock()
	}
	switch {
	case old == nil && !deleted:
		jc.expect.Observed(key, true)
	case deleted && (old == nil || old.DeletionTimestamp == nil):
		jc.expect.Observed(key, false)
	case old != nil && old.DeletionTimestamp == nil && p.DeletionTimestamp != nil:
		jc.expect.Observed(key, false)
	}
	if deleted || podFinished(p) || p.DeletionTimestamp != nil {
		// Kube batches the syncs a pod's end causes, a second apart.
		jc.queue.AddAfter(key, time.Second)
		return
	}
	jc.queue.Add(key)
}

// enqueueMatching syncs the Jobs whose selector matches an orphan pod.
func (jc *Controller) enqueueMatching(p *corev1.Pod) {
	jobs, _ := jc.jobs.Jobs(p.Namespace).List(labels.Everything())
	for _, j := range jobs {
		if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && sel.Matches(labels.Set(p.Labels)) {
			controllers.Enqueue(jc.queue, j)
		}
	}
}

// syncOrphan removes the tracking finalizer from a pod no unfinished Job
// counts.
func (jc *Controller) syncOrphan(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	p, err := jc.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasFinalizer(p) {
		return nil
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		if ref.Kind != gvk.Kind || ref.APIVersion != gvk.GroupVersion().String() {
			return nil // someone else's
		}
		if j, err := jc.jobs.Jobs(ns).Get(ref.Name); err == nil && j.UID == ref.UID && !finished(j) {
			return nil
		}
	}
	return ignoreNotFound(jc.removeFinalizer(ctx, p))
}

// syncState is what one sync works out.
type syncState struct {
	job          *batchv1.Job
	key          string
	pods, active []*corev1.Pod
	ready        int32
	terminating  int32
	succeeded    int32
	failed       int32
	uncounted    uncounted
	rmPending    map[types.UID]bool
	prevIndexes  indexSet // from status.completedIndexes
	succIndexes  indexSet // with the succeeded pods
	finished     *batchv1.JobCondition
	newBackoff   backoffRecord
}

type uncounted struct{ succeeded, failed map[types.UID]bool }

func (jc *Controller) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	shared, err := jc.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		jc.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if finished(shared) {
		jc.mu.Lock()
		delete(jc.backoff, key)
		jc.mu.Unlock()
		return nil
	}
	if m := shared.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		return nil
	}
	if shared.Spec.ManagedBy != nil && *shared.Spec.ManagedBy != batchv1.JobControllerName {
		return nil
	}
	job := shared.DeepCopy()
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	satisfied := jc.expect.Satisfied(key)
	pods, err := jc.claim(ctx, job)
	if err != nil {
		return err
	}
	now := jc.now()
	s := &syncState{job: job, key: key, pods: pods, uncounted: newUncounted(job.Status.UncountedTerminatedPods)}
	jc.mu.Lock()
	s.rmPending = cloneSet(jc.rmPending[key])
	jc.mu.Unlock()
	for _, p := range pods {
		switch {
		case podFinished(p):
		case p.DeletionTimestamp != nil:
			s.terminating++
		default:
			s.active = append(s.active, p)
			if controllers.PodReady(p) {
				s.ready++
			}
		}
	}
	active := int32(len(s.active))
	newSucceeded, newFailed := jc.newlyFinished(s)
	s.succeeded = job.Status.Succeeded + int32(len(newSucceeded)+len(s.uncounted.succeeded))
	s.failed = job.Status.Failed + int32(len(newFailed)+len(s.uncounted.failed))
	if job.Status.StartTime == nil && !suspended(job) {
		job.Status.StartTime = ptr.To(metav1.NewTime(now))
	}
	s.newBackoff = jc.nextBackoff(key, newSucceeded, newFailed, now)

	s.finished = condition(job, batchv1.JobSuccessCriteriaMet)
	if s.finished == nil {
		if ft := condition(job, batchv1.JobFailureTarget); ft != nil {
			s.finished = newCondition(batchv1.JobFailed, ft.Reason, ft.Message, now)
		}
	}
	if s.finished == nil {
		switch {
		case s.failed > ptr.Deref(job.Spec.BackoffLimit, 6) || pastBackoffLimitOnFailure(job, pods):
			s.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit", now)
		case pastDeadline(job, now):
			s.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline", now)
		case job.Spec.ActiveDeadlineSeconds != nil && !suspended(job):
			left := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - now.Sub(job.Status.StartTime.Time)
			jc.queue.AddAfter(key, left)
		}
	}
	if indexed(job) {
		s.prevIndexes, s.succIndexes = succeededIndexes(job, pods, s.rmPending)
		s.succeeded = int32(s.succIndexes.total())
	}
	var manageErr error
	suspendChanged := false
	if s.finished != nil {
		deletedReady, deleted, err := jc.deletePods(ctx, job, s.active, false)
		if deleted != active || !satisfied {
			s.finished = nil // not yet: pods to go, or not yet seen
		}
		active -= deleted
		s.terminating += deleted
		s.ready -= deletedReady
		manageErr = err
	} else {
		managed := false
		if satisfied && job.DeletionTimestamp == nil {
			active, manageErr = jc.manage(ctx, s, now)
			managed = true
		}
		complete := false
		if job.Spec.Completions == nil {
			complete = s.succeeded > 0 && active == 0
		} else {
			complete = s.succeeded >= *job.Spec.Completions && active == 0
		}
		switch {
		case complete:
			s.finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods", now)
		case managed && suspended(job):
			if suspendChanged = setCondition(job, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now); suspendChanged {
				jc.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
			}
		case managed:
			if suspendChanged = setCondition(job, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now); suspendChanged {
				jc.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
				// A resumed Job's deadline counts from now.
				job.Status.StartTime = ptr.To(metav1.NewTime(now))
			}
		}
	}
	flush := suspendChanged || active != shared.Status.Active || !ptr.Equal(&s.ready, shared.Status.Ready) ||
		!ptr.Equal(&s.terminating, shared.Status.Terminating) || (shared.Status.StartTime == nil) != (job.Status.StartTime == nil)
	job.Status.Active = active
	job.Status.Ready = ptr.To(s.ready)
	job.Status.Terminating = ptr.To(s.terminating)
	if err := jc.track(ctx, s, flush, now); err != nil {
		return fmt.Errorf("tracking status: %w", err)
	}
	return manageErr
}

// claim returns the pods the Job owns once adoptions and releases are
// done, adopted ones taken as carrying the tracking finalizer.
func (jc *Controller) claim(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector: %w", err)
	}
	all, err := jc.pods.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	fresh := ownership.Recheck(job, func(ctx context.Context) (metav1.Object, error) {
		return jc.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	})
	patch := ownership.PodPatcher(jc.client)
	owned := map[types.UID]bool{}
	for _, p := range all {
		if metav1.IsControlledBy(p, job) {
			owned[p.UID] = true
		}
	}
	pods, err := ownership.Claim(ctx, job, gvk, sel, all, fresh, patch)
	// An adopted pod gets the tracking finalizer too, so that its end is
	// counted.
	for i, p := range pods {
		if owned[p.UID] || hasFinalizer(p) {
			continue
		}
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": []string{batchv1.JobTrackingFinalizer}, "uid": p.UID}})
		if perr := patch(ctx, p.Namespace, p.Name, body); perr != nil {
			if apierrors.IsNotFound(perr) {
				continue
			}
			return pods, perr
		}
		pods[i] = p.DeepCopy()
		pods[i].Finalizers = append(pods[i].Finalizers, batchv1.JobTrackingFinalizer)
	}
	return pods, err
}

// newlyFinished returns the pods that finished and are not counted yet.
func (jc *Controller) newlyFinished(s *syncState) (succeeded, failed []*corev1.Pod) {
	for _, p := range s.pods {
		if !hasFinalizer(p) || s.rmPending[p.UID] || s.uncounted.succeeded[p.UID] || s.uncounted.failed[p.UID] {
			continue
		}
		if indexed(s.job) {
			if ix := completionIndex(p); ix < 0 || ix >= int(*s.job.Spec.Completions) {
				continue
			}
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded = append(succeeded, p)
		case podFailed(p):
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

// nextBackoff is the Job's backoff record after the newly finished pods:
// a success with no new failure resets it; new failures add to it.
func (jc *Controller) nextBackoff(key string, succeeded, failed []*corev1.Pod, now time.Time) backoffRecord {
	jc.mu.Lock()
	r := jc.backoff[key]
	jc.mu.Unlock()
	if len(failed) == 0 {
		if len(succeeded) > 0 {
			return backoffRecord{}
		}
		return r
	}
	var lastSuccess time.Time
	for _, p := range succeeded {
		if t := finishTime(p, now); t.After(lastSuccess) {
			lastSuccess = t
		}
	}
	for _, p := range failed {
		t := finishTime(p, now)
		if t.After(lastSuccess) {
			r.failures++
			if t.After(r.last) {
				r.last = t
			}
		}
	}
	if !lastSuccess.IsZero() && r.last.Before(lastSuccess) {
		r = backoffRecord{}
	}
	return r
}

// remaining is how long the record still holds back new pods.
func (jc *Controller) remaining(r backoffRecord, now time.Time) time.Duration {
	if r.failures == 0 {
		return 0
	}
	d := jc.opts.Backoff
	for i := 1; i < r.failures && d < jc.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, jc.opts.MaxBackoff)
	return max(d-now.Sub(r.last), 0)
}

// manage creates or deletes pods to have the active pods the Job wants.
// It returns the number active afterwards.
func (jc *Controller) manage(ctx context.Context, s *syncState, now time.Time) (int32, error) {
	job := s.job
	active := int32(len(s.active))
	if suspended(job) {
		deletedReady, deleted, err := jc.deletePods(ctx, job, s.active, true)
		s.terminating += deleted
		s.ready -= deletedReady
		return active - deleted, err
	}
	parallelism := ptr.Deref(job.Spec.Parallelism, 1)
	var want int32
	if job.Spec.Completions == nil {
		want = parallelism
		if s.succeeded > 0 {
			want = active
		}
	} else {
		want = max(min(*job.Spec.Completions-s.succeeded, parallelism), 0)
	}
	if rm := removable(job, s.active, int(max(active-want, 0))); len(rm) > 0 {
		if len(rm) > maxCreateDelete {
			rm = rm[:maxCreateDelete]
		}
		deletedReady, deleted, err := jc.deletePods(ctx, job, rm, true)
		s.terminating += deleted
		s.ready -= deletedReady
		return active - deleted, err
	}
	diff := want - active
	if diff <= 0 {
		return active, nil
	}
	if left := jc.remaining(s.newBackoff, now); left > 0 {
		jc.queue.AddAfter(s.key, max(left, time.Second))
		return active, nil
	}
	diff = min(diff, maxCreateDelete)
	var indexes []int
	if indexed(job) {
		indexes = pendingIndexes(s, int(diff))
		diff = int32(len(indexes))
	}
	template := job.Spec.Template.DeepCopy()
	if indexed(job) {
		addIndexEnv(template)
	}
	if !slices.Contains(template.Finalizers, batchv1.JobTrackingFinalizer) {
		template.Finalizers = append(template.Finalizers, batchv1.JobTrackingFinalizer)
	}
	jc.expect.Expect(s.key, int(diff), 0)
	var mu sync.Mutex
	var errs []error
	// Slow start, as kube's: batches of 1, 2, 4 … stop at the first error.
	for batch, i := int32(1), int32(0); i < diff; batch *= 2 {
		n := min(batch, diff-i)
		var wg sync.WaitGroup
		failed := 0
		for k := range n {
			ix := -1
			if indexes != nil {
				ix = indexes[i+k]
			}
			wg.Go(func() {
				err := jc.createPod(ctx, job, template, ix)
				if err != nil {
					jc.expect.Observed(s.key, true)
					mu.Lock()
					failed++
					if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
						errs = append(errs, err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		active += n - int32(failed)
		i += n
		if failed > 0 {
			for ; i < diff; i++ {
				jc.expect.Observed(s.key, true)
			}
		}
	}
	return active, errors.Join(errs...)
}

func (jc *Controller) createPod(ctx context.Context, job *batchv1.Job, template *corev1.PodTemplateSpec, ix int) error {
	if ix >= 0 {
		template = template.DeepCopy()
		if template.Annotations == nil {
			template.Annotations = map[string]string{}
		}
		if template.Labels == nil {
			template.Labels = map[string]string{}
		}
		template.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
		template.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
		template.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, ix)
	}
	pod := ownership.PodFromTemplate(template, job, gvk)
	if ix >= 0 {
		pod.GenerateName = indexedGenerateName(job.Name, ix)
	}
	created, err := jc.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			jc.recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	jc.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

// maxGeneratedNameLength is how much of a generateName the API server
// keeps before its five random characters.
const maxGeneratedNameLength = 58

// indexedGenerateName is JOB-INDEX-, the Job's name cut to fit.
func indexedGenerateName(job string, ix int) string {
	suffix := "-" + strconv.Itoa(ix) + "-"
	if len(job)+len(suffix) > maxGeneratedNameLength {
		job = job[:maxGeneratedNameLength-len(suffix)]
	}
	return job + suffix
}

// addIndexEnv gives every container JOB_COMPLETION_INDEX from the pod's
// completion index annotation, unless it sets the variable itself.
func addIndexEnv(t *corev1.PodTemplateSpec) {
	add := func(cs []corev1.Container) {
		for i := range cs {
			if slices.ContainsFunc(cs[i].Env, func(e corev1.EnvVar) bool { return e.Name == indexEnv }) {
				continue
			}
			cs[i].Env = append(cs[i].Env, corev1.EnvVar{Name: indexEnv, ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)}}})
		}
	}
	add(t.Spec.InitContainers)
	add(t.Spec.Containers)
}

// deletePods deletes pods, first removing their tracking finalizers when
// uncount (pods the Job gives up on without counting them: suspended,
// surplus). It returns how many of the deleted were ready and how many
// were deleted.
func (jc *Controller) deletePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod, uncount bool) (int32, int32, error) {
	key := job.Namespace + "/" + job.Name
	if uncount {
		jc.expect.Expect(key, 0, len(pods))
	}
	var mu sync.Mutex
	var ready, deleted int32
	var errs []error
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Go(func() {
			err := error(nil)
			if uncount {
				err = ignoreNotFound(jc.removeFinalizer(ctx, p))
			}
			if err == nil {
				err = jc.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
				switch {
				case err == nil:
					jc.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
				case !apierrors.IsNotFound(err):
					jc.recorder.Eventf(job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && uncount {
				jc.expect.Observed(key, false) // no deletion to see
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				return
			}
			deleted++
			if controllers.PodReady(p) {
				ready++
			}
		})
	}
	wg.Wait()
	return ready, deleted, errors.Join(errs...)
}

// track counts finished pods into the status the way kube does, so that
// none is counted twice or lost: uncounted UIDs first, then finalizers
// removed, then counts; then, with nothing uncounted and no pod
// terminating, the final condition.
func (jc *Controller) track(ctx context.Context, s *syncState, flush bool, now time.Time) error {
	job := s.job
	withFinalizer := map[types.UID]bool{}
	for _, p := range s.pods {
		if hasFinalizer(p) && !s.rmPending[p.UID] {
			withFinalizer[p.UID] = true
		}
	}
	if countRemoved(&job.Status, withFinalizer) {
		flush = true
	}
	u := job.Status.UncountedTerminatedPods
	var toRemove []*corev1.Pod
	var newIndexes []int
	full := false
	pods := s.pods
	if indexed(job) {
		pods = slices.Clone(pods)
		sort.SliceStable(pods, func(a, b int) bool { return completionIndex(pods[a]) < completionIndex(pods[b]) })
	}
	for _, p := range pods {
		if !hasFinalizer(p) || s.rmPending[p.UID] {
			continue
		}
		failed := podFailed(p)
		if !(job.DeletionTimestamp != nil || s.finished != nil || p.Status.Phase == corev1.PodSucceeded || failed) {
			continue
		}
		toRemove = append(toRemove, p)
		ix := completionIndex(p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !s.uncounted.failed[p.UID]:
			if indexed(job) {
				if ix >= 0 && ix < int(*job.Spec.Completions) && !s.prevIndexes.has(ix) {
					newIndexes = append(newIndexes, ix)
					flush = true
				}
			} else if !s.uncounted.succeeded[p.UID] {
				u.Succeeded = append(u.Succeeded, p.UID)
				flush = true
			}
		case failed || (s.finished != nil && s.finished.Type != batchv1.JobSuccessCriteriaMet):
			if !s.uncounted.failed[p.UID] && (!indexed(job) || (ix >= 0 && ix < int(*job.Spec.Completions))) {
				u.Failed = append(u.Failed, p.UID)
				flush = true
			}
		}
		if len(newIndexes)+len(u.Succeeded)+len(u.Failed) >= maxUncounted {
			full = true
			break
		}
	}
	if indexed(job) {
		s.succIndexes = s.succIndexes.with(newIndexes)
		if str := s.succIndexes.String(); str != job.Status.CompletedIndexes {
			job.Status.CompletedIndexes = str
			flush = true
		}
		job.Status.Succeeded = int32(s.succIndexes.total())
	}
	if s.finished != nil && s.finished.Type == batchv1.JobFailureTarget {
		job.Status.Conditions = append(job.Status.Conditions, *s.finished)
		flush = true
		s.finished = newCondition(batchv1.JobFailed, s.finished.Reason, s.finished.Message, now)
	}
	if s.finished != nil && s.finished.Type == batchv1.JobSuccessCriteriaMet {
		if condition(job, batchv1.JobSuccessCriteriaMet) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *s.finished)
			flush = true
		}
		s.finished = newCondition(batchv1.JobComplete, s.finished.Reason, s.finished.Message, now)
	}
	// 1. The newly finished pods are recorded as uncounted.
	if flush {
		updated, err := jc.updateStatus(ctx, job)
		if err != nil {
			return fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		*job = *updated
		jc.mu.Lock()
		jc.backoff[s.key] = s.newBackoff
		jc.mu.Unlock()
		flush = false
	}
	// 2. Their finalizers are removed.
	var rmErr error
	if len(toRemove) > 0 {
		var removed []types.UID
		removed, rmErr = jc.removeFinalizers(ctx, s.key, toRemove)
		for _, uid := range removed {
			delete(withFinalizer, uid)
		}
	}
	// 3. Those without a finalizer now are counted.
	if countRemoved(&job.Status, withFinalizer) {
		flush = true
	}
	if rmErr != nil {
		if flush {
			if _, err := jc.updateStatus(ctx, job); err != nil {
				return errors.Join(rmErr, err)
			}
		}
		return rmErr
	}
	// 4. The Job finishes once nothing is uncounted or terminating.
	done := false
	if !full && s.finished != nil && len(u.Succeeded)+len(u.Failed) == 0 && ptr.Deref(job.Status.Terminating, 0) == 0 {
		setCondition(job, s.finished.Type, corev1.ConditionTrue, s.finished.Reason, s.finished.Message, now)
		if s.finished.Type == batchv1.JobComplete {
			job.Status.CompletionTime = ptr.To(metav1.NewTime(now))
		}
		flush, done = true, true
	}
	if flush {
		if _, err := jc.updateStatus(ctx, job); err != nil {
			return fmt.Errorf("removing uncounted pods from status: %w", err)
		}
	}
	if done {
		jc.log.Info("job finished", "job", s.key, "condition", s.finished.Type, "reason", s.finished.Reason)
		if s.finished.Type == batchv1.JobComplete {
			if c := job.Spec.Completions; c != nil && job.Status.Succeeded > *c {
				jc.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
			}
			jc.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		} else {
			jc.recorder.Event(job, corev1.EventTypeWarning, s.finished.Reason, s.finished.Message)
		}
	}
	return nil
}

// countRemoved moves the uncounted UIDs whose pods no longer carry the
// finalizer into the succeeded and failed counts.
func countRemoved(st *batchv1.JobStatus, withFinalizer map[types.UID]bool) bool {
	u := st.UncountedTerminatedPods
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, uid := range uids {
			if withFinalizer[uid] {
				out = append(out, uid)
			}
		}
		return out
	}
	changed := false
	if k := keep(u.Succeeded); len(k) != len(u.Succeeded) {
		st.Succeeded += int32(len(u.Succeeded) - len(k))
		u.Succeeded, changed = k, true
	}
	if k := keep(u.Failed); len(k) != len(u.Failed) {
		st.Failed += int32(len(u.Failed) - len(k))
		u.Failed, changed = k, true
	}
	return changed
}

// removeFinalizers removes the tracking finalizer from pods, remembering
// each removal until the pod informer shows it. It returns the UIDs of
// the pods without the finalizer now (a pod gone counts).
func (jc *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]types.UID, error) {
	jc.mu.Lock()
	if jc.rmPending[key] == nil {
		jc.rmPending[key] = map[types.UID]bool{}
	}
	for _, p := range pods {
		jc.rmPending[key][p.UID] = true
	}
	jc.mu.Unlock()
	var mu sync.Mutex
	var done []types.UID
	var errs []error
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Go(func() {
			err := jc.removeFinalizer(ctx, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !apierrors.IsNotFound(err) {
				jc.mu.Lock()
				delete(jc.rmPending[key], p.UID)
				jc.mu.Unlock()
				errs = append(errs, err)
				return
			}
			done = append(done, p.UID)
		})
	}
	wg.Wait()
	return done, errors.Join(errs...)
}

func (jc *Controller) removeFinalizer(ctx context.Context, p *corev1.Pod) error {
	if !hasFinalizer(p) {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer}}})
	_, err := jc.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	return err
}

func (jc *Controller) updateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return jc.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}

func (jc *Controller) forget(key string) {
	jc.expect.Forget(key)
	jc.mu.Lock()
	defer jc.mu.Unlock()
	delete(jc.rmPending, key)
	delete(jc.backoff, key)
}

// removable returns at least n of the active pods to delete: for an
// Indexed Job first those with a duplicate or out-of-range index, then
// the earliest in their lifecycle (unscheduled, pending, not ready, the
// newest).
func removable(job *batchv1.Job, active []*corev1.Pod, n int) []*corev1.Pod {
	var rm, left []*corev1.Pod
	if indexed(job) {
		seen := map[int]bool{}
		sorted := slices.Clone(active)
		sort.SliceStable(sorted, func(a, b int) bool { return earlier(sorted[b], sorted[a]) }) // keep the most advanced
		for _, p := range sorted {
			ix := completionIndex(p)
			if ix < 0 || ix >= int(*job.Spec.Completions) || seen[ix] {
				rm = append(rm, p)
				continue
			}
			seen[ix] = true
			left = append(left, p)
		}
	} else {
		left = slices.Clone(active)
	}
	if len(rm) < n {
		sort.SliceStable(left, func(a, b int) bool { return earlier(left[a], left[b]) })
		rm = append(rm, left[:min(n-len(rm), len(left))]...)
	}
	return rm
}

// earlier reports whether pod a is less far along than b, kube's ranking
// of active pods for deletion.
func earlier(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	rank := map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}
	if rank[a.Status.Phase] != rank[b.Status.Phase] {
		return rank[a.Status.Phase] < rank[b.Status.Phase]
	}
	if controllers.PodReady(a) != controllers.PodReady(b) {
		return !controllers.PodReady(a)
	}
	return b.CreationTimestamp.Before(&a.CreationTimestamp)
}

// pendingIndexes returns up to n indexes, lowest first, that have neither
// succeeded nor an active pod.
func pendingIndexes(s *syncState, n int) []int {
	busy := map[int]bool{}
	for _, p := range s.active {
		busy[completionIndex(p)] = true
	}
	return s.succIndexes.missing(int(*s.job.Spec.Completions), n, busy)
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure, the restarts of
// the running and pending pods' containers reach backoffLimit.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}
	limit := ptr.Deref(job.Spec.BackoffLimit, 6)
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

func pastDeadline(job *batchv1.Job, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || suspended(job) {
		return false
	}
	return now.Sub(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// finishTime is when a finished pod's last container finished, else now.
func finishTime(p *corev1.Pod, now time.Time) time.Time {
	var t time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if tm := cs.State.Terminated; tm != nil && tm.FinishedAt.After(t) {
			t = tm.FinishedAt.Time
		}
	}
	if t.IsZero() {
		if p.DeletionTimestamp != nil {
			return p.DeletionTimestamp.Time
		}
		return now
	}
	return t
}

func newCondition(t batchv1.JobConditionType, reason, msg string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
}

// condition returns the Job's condition of type t if it is True.
func condition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// setCondition sets condition t, adding it only if it is not False. It
// reports whether anything changed.
func setCondition(job *batchv1.Job, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) bool {
	for i, c := range job.Status.Conditions {
		if c.Type == t {
			if c.Status == status && c.Reason == reason && c.Message == msg {
				return false
			}
			job.Status.Conditions[i] = batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: msg,
				LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
			return true
		}
	}
	if status == corev1.ConditionFalse {
		return false
	}
	job.Status.Conditions = append(job.Status.Conditions, *newCondition(t, reason, msg, now))
	return true
}

// finished reports whether the Job has its Complete or Failed condition.
func finished(job *batchv1.Job) bool {
	return condition(job, batchv1.JobComplete) != nil || condition(job, batchv1.JobFailed) != nil
}

func suspended(job *batchv1.Job) bool { return ptr.Deref(job.Spec.Suspend, false) }

func indexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion && job.Spec.Completions != nil
}

func hasFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podFailed: Failed, or deleted before it succeeded (kube's default
// podReplacementPolicy, TerminatingOrFailed).
func podFailed(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || (p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded)
}

// completionIndex is the pod's index annotation, or -1.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return -1
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 || strconv.Itoa(ix) != v {
		return -1
	}
	return ix
}

func newUncounted(u *batchv1.UncountedTerminatedPods) uncounted {
	out := uncounted{succeeded: map[types.UID]bool{}, failed: map[types.UID]bool{}}
	for _, uid := range u.Succeeded {
		out.succeeded[uid] = true
	}
	for _, uid := range u.Failed {
		out.failed[uid] = true
	}
	return out
}

func cloneSet(m map[types.UID]bool) map[types.UID]bool {
	out := make(map[types.UID]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
