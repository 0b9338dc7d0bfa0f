// Package cronjob is kube-controller-manager's CronJob controller: it
// creates a CronJob's Jobs at its scheduled times (docs/kubernetes-
// behaviour.md, G.7).
//
// For each CronJob it keeps status.active in step with the Jobs it owns
// (finished ones leave, and the completion time of the latest Complete
// one is status.lastSuccessfulTime); then, unless the CronJob is being
// deleted or is suspended, it works out the most recent scheduled time
// not yet run (from lastScheduleTime, or the creation time, and no
// earlier than startingDeadlineSeconds ago) in the CronJob's timeZone,
// and creates the Job NAME-<that time in minutes since the epoch> from
// the jobTemplate, with the batch.kubernetes.io/cronjob-scheduled-
// timestamp annotation, as concurrencyPolicy allows: Allow runs it
// beside active Jobs, Forbid skips the time while any is active, Replace
// deletes the active ones first. It then deletes the oldest finished Jobs
// past successfulJobsHistoryLimit and failedJobsHistoryLimit, and wakes
// itself for the next scheduled time.
//
// The identity it runs as needs: cronjobs list, watch, get; cronjobs/status
// update; jobs list, watch, get, create, delete.
package cronjob

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/ownership"
)

// Descriptor runs the controller in the controller manager, as kube's
// "cronjob" controller.
var Descriptor = controllers.Descriptor{Name: "cronjob", ServiceAccount: "cronjob-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c, Options{})
}}

const (
	// DefaultWorkers is kube-controller-manager's --concurrent-cron-job-syncs.
	DefaultWorkers = 5
	// nextDelta is how long after a scheduled time the CronJob is synced,
	// kube's margin against clock skew.
	nextDelta = 100 * time.Millisecond
	// maxMissed is how many missed times are tolerated without a warning.
	maxMissed = 100
	// maxWalk is how many scheduled times are stepped through one by one
	// to find the most recent.
	maxWalk = 10000
)

var gvk = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Options tune the controller.
type Options struct {
	Workers int
	// Clock tells the time and wakes the controller at scheduled times;
	// nil means the Context's Now with real timers.
	Clock Clock
}

// Clock is what the controller needs of a clock: k8s.io/utils/clock's
// RealClock and its testing FakeClock qualify.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// Controller is the CronJob controller.
type Controller struct {
	client   kubernetes.Interface
	log      *slog.Logger
	clock    Clock
	workers  int
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]

	mu    sync.Mutex
	wakes map[string]time.Time // the scheduled syncs arranged, by key

	recorder    record.EventRecorder
	startEvents func() (stop func())
}

// nowClock is the real clock with the Context's Now.
type nowClock struct {
	clock.RealClock
	now func() time.Time
}

func (c nowClock) Now() time.Time                  { return c.now() }
func (c nowClock) Since(t time.Time) time.Duration { return c.now().Sub(t) }

// New builds the controller from c.
func New(c *controllers.Context, o Options) (*Controller, error) {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Clock == nil {
		now := c.Now
		if now == nil {
			now = time.Now
		}
		o.Clock = nowClock{now: now}
	}
	cc := &Controller{client: c.Client, log: c.Logger, clock: o.Clock, workers: o.Workers, queue: controllers.NewQueue("cronjob"),
		wakes: map[string]time.Time{}}
	if cc.log == nil {
		cc.log = slog.Default()
	}
	cc.recorder, cc.startEvents = controllers.NewLazyRecorder(cc.client, "cronjob-controller")
	ci := c.Informers.Batch().V1().CronJobs()
	ji := c.Informers.Batch().V1().Jobs()
	cc.cronJobs, cc.jobs = ci.Lister(), ji.Lister()
	cc.synced = []cache.InformerSynced{ci.Informer().HasSynced, ji.Informer().HasSynced}
	if _, err := ci.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { controllers.Enqueue(cc.queue, obj) },
		UpdateFunc: func(_, obj any) { controllers.Enqueue(cc.queue, obj) },
		DeleteFunc: func(obj any) { controllers.Enqueue(cc.queue, obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := ji.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    cc.jobEvent,
		UpdateFunc: func(_, obj any) { cc.jobEvent(obj) },
		DeleteFunc: cc.jobEvent,
	}); err != nil {
		return nil, err
	}
	return cc, nil
}

// Run works until ctx is done.
func (cc *Controller) Run(ctx context.Context) error {
	defer cc.startEvents()()
	return controllers.RunWorkers(ctx, "cronjob", cc.queue, cc.workers, cc.log, cc.sync, cc.synced...)
}

// jobEvent syncs the CronJob that controls a Job.
func (cc *Controller) jobEvent(obj any) {
	obj = controllers.Unwrap(obj)
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.Kind == gvk.Kind && ref.APIVersion == gvk.GroupVersion().String() {
		cc.queue.Add(j.Namespace + "/" + ref.Name)
	}
}

func (cc *Controller) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	shared, err := cc.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	all, err := cc.jobs.Jobs(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var jobs []*batchv1.Job
	for _, j := range all {
		if metav1.IsControlledBy(j, shared) {
			jobs = append(jobs, j)
		}
	}
	cj := shared.DeepCopy()
	next, changed, err := cc.syncCronJob(ctx, cj, jobs)
	if err != nil {
		return err
	}
	if cc.cleanup(ctx, cj, jobs) {
		changed = true
	}
	if changed {
		if _, err := cc.client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if next > 0 {
		cc.wakeAt(key, next)
	}
	return nil
}

// wakeAt syncs key again after d on the controller's clock (retries run
// on the queue's real-time backoff).
func (cc *Controller) wakeAt(key string, d time.Duration) {
	at := cc.clock.Now().Add(d).Truncate(time.Second)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.wakes[key].Equal(at) {
		return // already arranged
	}
	cc.wakes[key] = at
	cc.clock.AfterFunc(d, func() {
		cc.mu.Lock()
		if cc.wakes[key].Equal(at) {
			delete(cc.wakes, key)
		}
		cc.mu.Unlock()
		cc.queue.Add(key)
	})
}

// syncCronJob brings cj's status in step with jobs and creates the Job of
// a scheduled time that is due. It returns when to sync next (0: on the
// next change only) and whether the status changed.
func (cc *Controller) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (time.Duration, bool, error) {
	now := cc.clock.Now()
	changed := false
	mine := map[types.UID]bool{}
	var fresh *batchv1.CronJob
	for _, j := range jobs {
		mine[j.UID] = true
		active := inActive(cj, j.UID)
		done, how := finishedCondition(j)
		switch {
		case !active && !done:
			// The cache may not show the status that lists it yet.
			if fresh == nil {
				f, err := cc.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
				if err != nil {
					return 0, changed, err
				}
				fresh = f
			}
			if fresh.UID == cj.UID && inActive(fresh, j.UID) {
				*cj = *fresh.DeepCopy() // what was worked out on the stale copy is worked out again next time
				continue
			}
			cc.recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case active && done:
			removeActive(cj, j.UID)
			cc.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, how)
			changed = true
		case !active && done:
			if j.Status.CompletionTime != nil && (cj.Status.LastSuccessfulTime == nil || j.Status.CompletionTime.After(cj.Status.LastSuccessfulTime.Time)) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime
				changed = true
			}
		}
	}
	// An active Job the cache does not show is checked with the API server.
	for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
		if mine[ref.UID] {
			continue
		}
		j, err := cc.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && j.UID != ref.UID):
			removeActive(cj, ref.UID)
			cc.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
			changed = true
		case err != nil:
			return 0, changed, err
		}
	}
	if cj.DeletionTimestamp != nil {
		return 0, changed, nil
	}
	loc := time.UTC
	if tz := cj.Spec.TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			cc.recorder.Eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return 0, changed, nil
		}
		loc = l
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return 0, changed, nil
	}
	sched, err := parseSchedule(scheduleSpec(cj))
	if err != nil {
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return 0, changed, nil
	}
	scheduled, missed, err := mostRecent(cj, sched, now)
	if err != nil {
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return 0, changed, nil
	}
	if missed > maxMissed {
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	next := untilNext(sched, scheduled, now)
	if scheduled == nil {
		return next, changed, nil
	}
	if sds := cj.Spec.StartingDeadlineSeconds; sds != nil && scheduled.Add(time.Duration(*sds)*time.Second).Before(now) {
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next, changed, nil
	}
	name := jobName(cj, *scheduled)
	if inActiveByName(cj, name) || (cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Equal(&metav1.Time{Time: *scheduled})) {
		return next, changed, nil
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			cc.recorder.Event(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return next, changed, nil
		}
	case batchv1.ReplaceConcurrent:
		for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			j, err := cc.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				removeActive(cj, ref.UID)
				changed = true
				continue
			}
			if err != nil {
				return 0, changed, err
			}
			if !cc.deleteJob(ctx, cj, j) {
				return 0, changed, fmt.Errorf("deleting job %s", j.Name)
			}
			changed = true
		}
	}
	job := jobFromTemplate(cj, *scheduled, loc)
	created, err := cc.client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return 0, changed, nil
	case apierrors.IsAlreadyExists(err):
		// The Job of this time exists. Made by another actor, it is left
		// to that actor's status update. Made by this controller, whose
		// status update was then lost (a conflict with a stale cache), it
		// goes back into the active list with the schedule time, as
		// kube-controller-manager does: else, once it finished and went
		// by the history limit, the same time would run again (G.7).
		existing, err := cc.client.BatchV1().Jobs(cj.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return 0, changed, err
		}
		if !metav1.IsControlledBy(existing, cj) || inActive(cj, existing.UID) {
			return next, changed, nil
		}
		created = existing
	case err != nil:
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, changed, err
	default:
		cc.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	}
	cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: created.Namespace, Name: created.Name,
		UID: created.UID, APIVersion: "batch/v1", ResourceVersion: created.ResourceVersion})
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	return next, true, nil
}

// scheduleSpec is the schedule with the CronJob's time zone, as the cron
// parser reads it.
func scheduleSpec(cj *batchv1.CronJob) string {
	if cj.Spec.TimeZone != nil {
		return "TZ=" + *cj.Spec.TimeZone + " " + cj.Spec.Schedule
	}
	return cj.Spec.Schedule
}

// parseSchedule is the cron parser's reading of spec, or an error, also
// for a spec on which the parser panics ("TZ=UTC").
func parseSchedule(spec string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	return cron.ParseStandard(spec)
}

// mostRecent returns the latest scheduled time after the last one run (or
// the CronJob's creation, or startingDeadlineSeconds ago if later) and no
// later than now, or nil, and roughly how many were missed.
func mostRecent(cj *batchv1.CronJob, sched cron.Schedule, now time.Time) (*time.Time, int64, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if sds := cj.Spec.StartingDeadlineSeconds; sds != nil {
		if d := now.Add(-time.Duration(*sds) * time.Second); d.After(earliest) {
			earliest = d
		}
	}
	t1 := sched.Next(earliest)
	if t1.IsZero() || now.Before(t1) {
		return nil, 0, nil
	}
	t2 := sched.Next(t1)
	if t2.IsZero() || now.Before(t2) {
		return &t1, 1, nil
	}
	every := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if every < 1 {
		return nil, 0, fmt.Errorf("less than a second between two scheduled times")
	}
	missed := int64(now.Sub(t1).Seconds())/every + 1
	var last time.Time
	walk := func(from time.Time) {
		for t := sched.Next(from); !t.IsZero() && !t.After(now); t = sched.Next(t) {
			last = t
		}
	}
	if missed <= maxWalk {
		walk(t1)
		last = later(last, t1)
		return &last, missed, nil
	}
	// Too many to walk through: start near the end, estimated from the
	// first interval, further back each time an irregular schedule
	// leaves nothing after the estimate.
	for back := int64(2); last.IsZero(); back *= 2 {
		from := t1
		if back < missed {
			from = t1.Add(time.Duration((missed-back)*every) * time.Second)
		}
		walk(from)
		if !from.After(t1) {
			last = later(last, t1)
		}
	}
	return &last, missed, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// untilNext is how long from now until just after the scheduled time
// following the most recent one (or now).
func untilNext(sched cron.Schedule, recent *time.Time, now time.Time) time.Duration {
	from := now
	if recent != nil {
		from = *recent
	}
	t := sched.Next(from)
	if t.IsZero() {
		return 0
	}
	for !t.After(now) { // a most recent time far back
		t = sched.Next(t)
	}
	return t.Add(nextDelta).Sub(now)
}

// jobName is NAME-<scheduled time in minutes since the epoch>.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return cj.Name + "-" + strconv.FormatInt(scheduled.Unix()/60, 10)
}

// jobFromTemplate is the Job for scheduled time t.
func jobFromTemplate(cj *batchv1.CronJob, t time.Time, loc *time.Location) *batchv1.Job {
	tpl := cj.Spec.JobTemplate.DeepCopy()
	annotations := maps.Clone(tpl.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = t.In(loc).Format(time.RFC3339)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:              jobName(cj, t),
			Namespace:         cj.Namespace,
			Labels:            tpl.Labels,
			Annotations:       annotations,
			OwnerReferences:   []metav1.OwnerReference{ownership.ControllerRef(cj, gvk)},
			CreationTimestamp: metav1.Time{Time: t},
		},
		Spec: tpl.Spec,
	}
}

// cleanup deletes the oldest finished Jobs past the history limits. It
// reports whether the status changed.
func (cc *Controller) cleanup(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	if cj.Spec.SuccessfulJobsHistoryLimit == nil && cj.Spec.FailedJobsHistoryLimit == nil {
		return false
	}
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch _, c := finishedCondition(j); c {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	changed := false
	if l := cj.Spec.SuccessfulJobsHistoryLimit; l != nil && cc.removeOldest(ctx, cj, succeeded, int(*l)) {
		changed = true
	}
	if l := cj.Spec.FailedJobsHistoryLimit; l != nil && cc.removeOldest(ctx, cj, failed, int(*l)) {
		changed = true
	}
	return changed
}

// removeOldest deletes all but the limit most recently started of jobs.
func (cc *Controller) removeOldest(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job, limit int) bool {
	if len(jobs) <= limit {
		return false
	}
	sort.SliceStable(jobs, func(a, b int) bool {
		sa, sb := jobs[a].Status.StartTime, jobs[b].Status.StartTime
		switch {
		case sa == nil && sb != nil:
			return false
		case sa != nil && sb == nil:
			return true
		case sa == nil || sa.Equal(sb):
			return jobs[a].Name < jobs[b].Name
		}
		return sa.Before(sb)
	})
	changed := false
	for _, j := range jobs[:len(jobs)-limit] {
		if cc.deleteJob(ctx, cj, j) {
			changed = true
		}
	}
	return changed
}

// deleteJob deletes j and its pods in the background and takes it out of
// cj's active list. It reports whether it did.
func (cc *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, j *batchv1.Job) bool {
	err := cc.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return false
	}
	removeActive(cj, j.UID)
	cc.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
	return true
}

// finishedCondition reports whether j has finished and how.
func finishedCondition(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

func inActive(cj *batchv1.CronJob, uid types.UID) bool {
	for _, r := range cj.Status.Active {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func inActiveByName(cj *batchv1.CronJob, name string) bool {
	for _, r := range cj.Status.Active {
		if r.Name == name {
			return true
		}
	}
	return false
}

func removeActive(cj *batchv1.CronJob, uid types.UID) {
	var keep []corev1.ObjectReference
	for _, r := range cj.Status.Active {
		if r.UID != uid {
			keep = append(keep, r)
		}
	}
	cj.Status.Active = keep
}
