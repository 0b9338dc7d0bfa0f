package cronjob_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/cronjob"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

// start runs an API server and the CronJob controller on a fake clock set
// a little after the next whole minute, so that CronJobs created now have
// that minute due.
func start(t *testing.T) (kubernetes.Interface, *testingclock.FakeClock) {
	t.Helper()
	return startWorkers(t, 0)
}

// startWorkers is start with that many workers.
func startWorkers(t *testing.T, workers int) (kubernetes.Interface, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Now().Truncate(time.Minute).Add(time.Minute + 5*time.Second))
	d := controllers.Descriptor{Name: "cronjob", New: func(c *controllers.Context) (controllers.Controller, error) {
		return cronjob.New(c, cronjob.Options{Clock: clk, Workers: workers})
	}}
	s := controllertest.StartWith(t, manager.Options{Descriptors: []controllers.Descriptor{d}, Logger: slog.New(slog.DiscardHandler)})
	return s.Client, clk
}

func newCronJob(name, schedule string, policy batchv1.ConcurrencyPolicy) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule:          schedule,
			ConcurrencyPolicy: policy,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: map[string]string{"note": "kept"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "work", Image: "busybox"}}}}},
			},
		},
	}
}

// create creates cj and makes sure clk is a little past the first whole
// minute after its creation, the first time the controller may schedule
// (G.7): a start slow enough to create cj after the minute start set clk
// past (near a minute's end, on a loaded machine) moves clk a minute on.
func create(t *testing.T, c kubernetes.Interface, clk *testingclock.FakeClock, cj *batchv1.CronJob) *batchv1.CronJob {
	t.Helper()
	cj, err := c.BatchV1().CronJobs("default").Create(context.Background(), cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first := cj.CreationTimestamp.Truncate(time.Minute).Add(time.Minute); clk.Now().Before(first) {
		clk.SetTime(first.Add(5 * time.Second))
	}
	return cj
}

// jobsOf lists the Jobs cj controls, oldest name first.
func jobsOf(t *testing.T, c kubernetes.Interface, cj *batchv1.CronJob) []batchv1.Job {
	t.Helper()
	list, err := c.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, cj) && j.DeletionTimestamp == nil {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func names(js []batchv1.Job) string {
	var s []string
	for _, j := range js {
		s = append(s, j.Name)
	}
	return strings.Join(s, ",")
}

// waitJobs waits until cj's Jobs are exactly want (by name).
func waitJobs(t *testing.T, c kubernetes.Interface, cj *batchv1.CronJob, want ...string) []batchv1.Job {
	t.Helper()
	var js []batchv1.Job
	testwait.For(t, wait, cj.Name+"'s jobs "+strings.Join(want, ","), func() (bool, string) {
		js = jobsOf(t, c, cj)
		return names(js) == strings.Join(want, ","), names(js)
	})
	return js
}

func minuteName(cj string, t time.Time) string {
	return cj + "-" + strconv.FormatInt(t.Unix()/60, 10)
}

// active waits until cj's status.active names want.
func active(t *testing.T, c kubernetes.Interface, cj *batchv1.CronJob, want ...string) *batchv1.CronJob {
	t.Helper()
	var got *batchv1.CronJob
	testwait.For(t, wait, cj.Name+" active "+strings.Join(want, ","), func() (bool, string) {
		var err error
		got, err = c.BatchV1().CronJobs("default").Get(context.Background(), cj.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var s []string
		for _, r := range got.Status.Active {
			s = append(s, r.Name)
		}
		sort.Strings(s)
		return strings.Join(s, ",") == strings.Join(want, ","), strings.Join(s, ",")
	})
	return got
}

// finishJob marks j Complete (or Failed), as the Job controller would.
func finishJob(t *testing.T, c kubernetes.Interface, j batchv1.Job, complete bool, at time.Time) {
	t.Helper()
	now := metav1.NewTime(at)
	j.Status.StartTime = &now
	if complete {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now}}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now}}
	}
	if _, err := c.BatchV1().Jobs("default").UpdateStatus(context.Background(), &j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestJobAtScheduledTime_G7(t *testing.T) {
	t.Parallel()
	c, clk := start(t)
	cj := newCronJob("tick", "*/1 * * * *", batchv1.AllowConcurrent)
	cj.Spec.TimeZone = ptr.To("Asia/Tokyo")
	cj = create(t, c, clk, cj)
	due := clk.Now().Truncate(time.Minute)
	js := waitJobs(t, c, cj, minuteName("tick", due))
	j := js[0]
	if got := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != due.In(mustZone(t, "Asia/Tokyo")).Format(time.RFC3339) || !strings.HasSuffix(got, "+09:00") {
		t.Errorf("scheduled-timestamp annotation %q, want %s in Tokyo time", got, due)
	}
	if j.Annotations["note"] != "kept" || j.Labels["app"] != "tick" {
		t.Errorf("job labels %v, annotations %v; want the template's", j.Labels, j.Annotations)
	}
	ref := metav1.GetControllerOf(&j)
	if ref == nil || ref.Kind != "CronJob" || ref.UID != cj.UID {
		t.Errorf("job controller %+v, want the CronJob", ref)
	}
	got := active(t, c, cj, j.Name)
	if got.Status.LastScheduleTime == nil || !got.Status.LastScheduleTime.Time.Equal(due) || got.Status.Active[0].UID != j.UID {
		t.Errorf("status %+v, want lastScheduleTime %v and the job active", got.Status, due)
	}
	// A minute on, Allow runs the next beside it.
	clk.Step(time.Minute)
	waitJobs(t, c, cj, minuteName("tick", due), minuteName("tick", due.Add(time.Minute)))
	// Finished: it leaves active and sets lastSuccessfulTime.
	finishJob(t, c, j, true, clk.Now())
	got = active(t, c, cj, minuteName("tick", due.Add(time.Minute)))
	testwait.For(t, wait, "lastSuccessfulTime", func() (bool, string) {
		got, _ = c.BatchV1().CronJobs("default").Get(context.Background(), "tick", metav1.GetOptions{})
		return got.Status.LastSuccessfulTime != nil, fmt.Sprintf("%+v", got.Status)
	})
}

func mustZone(t *testing.T, name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestForbidSkipsWhileActive_G7(t *testing.T) {
	t.Parallel()
	// One worker syncs the CronJobs in the order they change, so that once
	// the second (Allow) has acted on a time, the first has too.
	c, clk := startWorkers(t, 1)
	cj := create(t, c, clk, newCronJob("solo", "* * * * *", batchv1.ForbidConcurrent))
	free := create(t, c, clk, newCronJob("free", "* * * * *", batchv1.AllowConcurrent))
	due := clk.Now().Truncate(time.Minute)
	first := waitJobs(t, c, cj, minuteName("solo", due))[0]
	waitJobs(t, c, free, minuteName("free", due))
	active(t, c, cj, first.Name)
	active(t, c, free, minuteName("free", due))
	clk.Step(time.Minute)
	touch(t, c, "solo")
	touch(t, c, "free")
	waitJobs(t, c, free, minuteName("free", due), minuteName("free", due.Add(time.Minute)))
	// The next time has passed with the first still running: nothing new.
	if js := jobsOf(t, c, cj); names(js) != first.Name {
		t.Fatalf("jobs %s while %s runs, want none added", names(js), first.Name)
	}
	got := active(t, c, cj, first.Name)
	if !got.Status.LastScheduleTime.Time.Equal(due) {
		t.Errorf("lastScheduleTime %v, want %v (the skipped time not recorded)", got.Status.LastScheduleTime, due)
	}
	waitEvent(t, c, cj, "Normal", "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
	// Once it finishes, the time it held back runs, late (there is no
	// startingDeadlineSeconds to forbid that).
	finishJob(t, c, first, true, clk.Now())
	waitJobs(t, c, cj, first.Name, minuteName("solo", due.Add(time.Minute)))
}

// touch changes an annotation of CronJob name, which syncs it.
func touch(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cj, err := c.BatchV1().CronJobs("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cj.Annotations == nil {
			cj.Annotations = map[string]string{}
		}
		cj.Annotations["touched"] = time.Now().String()
		_, err = c.BatchV1().CronJobs("default").Update(context.Background(), cj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestReplaceDeletesActive_G7(t *testing.T) {
	t.Parallel()
	c, clk := start(t)
	cj := create(t, c, clk, newCronJob("swap", "* * * * *", batchv1.ReplaceConcurrent))
	due := clk.Now().Truncate(time.Minute)
	first := waitJobs(t, c, cj, minuteName("swap", due))[0]
	active(t, c, cj, first.Name)
	clk.Step(time.Minute)
	second := minuteName("swap", due.Add(time.Minute))
	waitJobs(t, c, cj, second)
	active(t, c, cj, second)
	waitEvent(t, c, cj, "Normal", "SuccessfulDelete", "Deleted job "+first.Name)
	waitEvent(t, c, cj, "Normal", "SuccessfulCreate", "Created job "+second)
}

// waitEvent waits until the CronJob has an event of reason whose message
// contains msg.
func waitEvent(t *testing.T, c kubernetes.Interface, cj *batchv1.CronJob, typ, reason, msg string) {
	t.Helper()
	testwait.For(t, wait, fmt.Sprintf("%s event %s %q", cj.Name, reason, msg), func() (bool, string) {
		list, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.UID != cj.UID {
				continue
			}
			if e.Type == typ && e.Reason == reason && strings.Contains(e.Message, msg) && e.Source.Component == "cronjob-controller" {
				return true, ""
			}
			seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})
}

func TestHistoryLimits_G7(t *testing.T) {
	t.Parallel()
	c, clk := start(t)
	cj := newCronJob("hist", "* * * * *", batchv1.AllowConcurrent)
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
	cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](0)
	cj = create(t, c, clk, cj)
	due := clk.Now().Truncate(time.Minute)
	var want []string
	for i := range 3 {
		name := minuteName("hist", due.Add(time.Duration(i)*time.Minute))
		want = append(want, name)
		js := waitJobs(t, c, cj, want...)
		var j batchv1.Job
		for _, x := range js {
			if x.Name == name {
				j = x
			}
		}
		// The Job finishes once the CronJob's status lists it, as a real
		// Job does: the status write that records its schedule time has
		// landed, so deleting it past the history limit cannot make
		// that time due again (G.7).
		active(t, c, cj, name)
		// The first two succeed, the third fails.
		finishJob(t, c, j, i < 2, clk.Now())
		if i == 1 {
			want = want[1:] // only the newest success is kept
		}
		if i == 2 {
			want = want[:1] // no failure is kept
		}
		waitJobs(t, c, cj, want...)
		clk.Step(time.Minute)
	}
}

// TestOwnJobOfTheTimeGoesBackIntoActive_G7: the Job of a due time that
// exists already, controlled by the CronJob but missing from its active
// list (the status update after its creation was lost), goes back into
// the list with the schedule time, as kube-controller-manager does. It is
// not made again, and the time does not run twice.
func TestOwnJobOfTheTimeGoesBackIntoActive_G7(t *testing.T) {
	t.Parallel()
	c, clk := start(t)
	ctx := context.Background()
	cj := newCronJob("lost", "* * * * *", batchv1.AllowConcurrent)
	cj.Spec.Suspend = ptr.To(true)
	cj = create(t, c, clk, cj)
	due := clk.Now().Truncate(time.Minute)
	name := minuteName("lost", due)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: cj.Spec.JobTemplate.Labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
		Spec: cj.Spec.JobTemplate.Spec}
	if _, err := c.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BatchV1().CronJobs("default").Patch(ctx, cj.Name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got := active(t, c, cj, name)
	if lst := got.Status.LastScheduleTime; lst == nil || !lst.Time.Equal(due) {
		t.Errorf("lastScheduleTime %v, want %v", lst, due)
	}
	waitJobs(t, c, cj, name)
}
