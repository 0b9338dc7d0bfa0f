package job_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/job"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

// start runs an API server and the Job controller, with a short backoff.
func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	d := controllers.Descriptor{Name: "job", New: func(c *controllers.Context) (controllers.Controller, error) {
		return job.New(c, job.Options{Backoff: 50 * time.Millisecond})
	}}
	return controllertest.StartWith(t, manager.Options{Descriptors: []controllers.Descriptor{d}, Logger: slog.New(slog.DiscardHandler)}).Client
}

func newJob(name string, parallelism, completions int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(parallelism),
			Completions: ptr.To(completions),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "work", Image: "busybox"}}},
			},
		},
	}
}

func create(t *testing.T, c kubernetes.Interface, j *batchv1.Job) *batchv1.Job {
	t.Helper()
	j, err := c.BatchV1().Jobs("default").Create(context.Background(), j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// podsOf lists the pods controlled by j, by name.
func podsOf(t *testing.T, c kubernetes.Interface, j *batchv1.Job) []corev1.Pod {
	t.Helper()
	list, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if metav1.IsControlledBy(&p, j) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// activePods waits until j has n pods neither finished nor being deleted,
// and returns them.
func activePods(t *testing.T, c kubernetes.Interface, j *batchv1.Job, n int) []corev1.Pod {
	t.Helper()
	var active []corev1.Pod
	testwait.For(t, wait, fmt.Sprintf("%d active pods of %s", n, j.Name), func() (bool, string) {
		active = nil
		for _, p := range podsOf(t, c, j) {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				active = append(active, p)
			}
		}
		return len(active) == n, fmt.Sprintf("%d", len(active))
	})
	return active
}

// finish reports pod p's containers exited with code, as a kubelet would.
func finish(t *testing.T, c kubernetes.Interface, p corev1.Pod, code int32) {
	t.Helper()
	p.Status.Phase = corev1.PodSucceeded
	reason := "Completed"
	if code != 0 {
		p.Status.Phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "work", Image: "busybox",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: now, FinishedAt: now}}}}
	if _, err := c.CoreV1().Pods("default").UpdateStatus(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// finishedJob waits until j has condition t True and returns it.
func finishedJob(t *testing.T, c kubernetes.Interface, j *batchv1.Job, ct batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	var got *batchv1.Job
	testwait.For(t, wait, j.Name+" "+string(ct), func() (bool, string) {
		var err error
		got, err = c.BatchV1().Jobs("default").Get(context.Background(), j.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cd := range got.Status.Conditions {
			if cd.Type == ct && cd.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("status %+v", got.Status)
	})
	return got
}

// conditions lists a Job's conditions as TYPE=STATUS/REASON.
func conditions(j *batchv1.Job) string {
	var s []string
	for _, c := range j.Status.Conditions {
		s = append(s, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return strings.Join(s, ",")
}

// noFinalizers waits until none of j's pods carries the tracking
// finalizer.
func noFinalizers(t *testing.T, c kubernetes.Interface, j *batchv1.Job) {
	t.Helper()
	testwait.For(t, wait, j.Name+"'s pods without the tracking finalizer", func() (bool, string) {
		for _, p := range podsOf(t, c, j) {
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				return false, p.Name + " has it"
			}
		}
		return true, ""
	})
}

// waitEvent waits until the Job has an event of reason whose message
// contains msg.
func waitEvent(t *testing.T, c kubernetes.Interface, j *batchv1.Job, typ, reason, msg string) {
	t.Helper()
	testwait.For(t, wait, fmt.Sprintf("%s event %s %q", j.Name, reason, msg), func() (bool, string) {
		list, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.UID != j.UID {
				continue
			}
			if e.Type == typ && e.Reason == reason && strings.Contains(e.Message, msg) && e.Source.Component == "job-controller" {
				return true, ""
			}
			seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})
}

func TestPodsPerParallelismUntilComplete_G6(t *testing.T) {
	t.Parallel()
	c := start(t)
	j := create(t, c, newJob("work", 2, 3))
	pods := activePods(t, c, j, 2)
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, "work-") || len(p.Name) != len("work-")+5 {
			t.Errorf("pod name %q, want work-xxxxx", p.Name)
		}
		if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			t.Errorf("pod %s finalizers %v, want %s", p.Name, p.Finalizers, batchv1.JobTrackingFinalizer)
		}
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "Job" || ref.APIVersion != "batch/v1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("pod %s controller %+v, want the Job, blocking", p.Name, ref)
		}
		for k, v := range map[string]string{"app": "work", batchv1.JobNameLabel: "work", batchv1.ControllerUidLabel: string(j.UID),
			"job-name": "work", "controller-uid": string(j.UID)} {
			if p.Labels[k] != v {
				t.Errorf("pod %s label %s = %q, want %q", p.Name, k, p.Labels[k], v)
			}
		}
	}
	testwait.For(t, wait, "status active 2 and startTime", func() (bool, string) {
		got, err := c.BatchV1().Jobs("default").Get(context.Background(), "work", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := got.Status
		return st.Active == 2 && ptr.Deref(st.Ready, -1) == 0 && ptr.Deref(st.Terminating, -1) == 0 && st.StartTime != nil,
			fmt.Sprintf("%+v", st)
	})
	for _, p := range pods {
		finish(t, c, p, 0)
	}
	// Two of three done: one more pod, and no more.
	last := activePods(t, c, j, 1)
	testwait.For(t, wait, "succeeded 2", func() (bool, string) {
		got, _ := c.BatchV1().Jobs("default").Get(context.Background(), "work", metav1.GetOptions{})
		return got.Status.Succeeded == 2 && got.Status.Active == 1, fmt.Sprintf("%+v", got.Status)
	})
	finish(t, c, last[0], 0)
	got := finishedJob(t, c, j, batchv1.JobComplete)
	if s := conditions(got); s != "SuccessCriteriaMet=True/CompletionsReached,Complete=True/CompletionsReached" {
		t.Errorf("conditions %s, want SuccessCriteriaMet then Complete, reason CompletionsReached", s)
	}
	for _, cd := range got.Status.Conditions {
		if cd.Message != "Reached expected number of succeeded pods" {
			t.Errorf("%s message %q", cd.Type, cd.Message)
		}
	}
	st := got.Status
	if st.Succeeded != 3 || st.Failed != 0 || st.Active != 0 || st.CompletionTime == nil ||
		len(st.UncountedTerminatedPods.Succeeded)+len(st.UncountedTerminatedPods.Failed) != 0 {
		t.Errorf("status %+v, want 3 succeeded, none active or uncounted, a completionTime", st)
	}
	if n := len(podsOf(t, c, j)); n != 3 {
		t.Errorf("%d pods, want 3", n)
	}
	noFinalizers(t, c, j)
	waitEvent(t, c, j, "Normal", "SuccessfulCreate", "Created pod: "+last[0].Name)
	waitEvent(t, c, j, "Normal", "Completed", "Job completed")
}

func TestFailuresPastBackoffLimitFail_G6(t *testing.T) {
	t.Parallel()
	c := start(t)
	j := newJob("flaky", 1, 1)
	j.Spec.BackoffLimit = ptr.To[int32](1)
	j = create(t, c, j)
	first := activePods(t, c, j, 1)[0]
	finish(t, c, first, 1)
	// One failure is within the limit: a replacement.
	second := activePods(t, c, j, 1)[0]
	if second.Name == first.Name {
		t.Fatalf("no replacement for %s", first.Name)
	}
	finish(t, c, second, 1)
	got := finishedJob(t, c, j, batchv1.JobFailed)
	if s := conditions(got); s != "FailureTarget=True/BackoffLimitExceeded,Failed=True/BackoffLimitExceeded" {
		t.Errorf("conditions %s, want FailureTarget then Failed, reason BackoffLimitExceeded", s)
	}
	for _, cd := range got.Status.Conditions {
		if cd.Message != "Job has reached the specified backoff limit" {
			t.Errorf("%s message %q", cd.Type, cd.Message)
		}
	}
	if st := got.Status; st.Failed != 2 || st.Succeeded != 0 || st.Active != 0 || st.CompletionTime != nil {
		t.Errorf("status %+v, want 2 failed, no completionTime", st)
	}
	if n := len(podsOf(t, c, j)); n != 2 {
		t.Errorf("%d pods, want 2", n)
	}
	noFinalizers(t, c, j)
	waitEvent(t, c, j, "Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
}

func TestIndexedPodsNamesAndEnv_G6(t *testing.T) {
	t.Parallel()
	c := start(t)
	j := newJob("idx", 3, 3)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j = create(t, c, j)
	pods := activePods(t, c, j, 3)
	byIndex := map[string]corev1.Pod{}
	for _, p := range pods {
		ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		byIndex[ix] = p
		if !strings.HasPrefix(p.Name, "idx-"+ix+"-") || len(p.Name) != len("idx-0-")+5 {
			t.Errorf("pod %s with index %q, want idx-%s-xxxxx", p.Name, ix, ix)
		}
		if p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || p.Spec.Hostname != "idx-"+ix {
			t.Errorf("pod %s: index label %q, hostname %q; want %s, idx-%s", p.Name, p.Labels[batchv1.JobCompletionIndexAnnotation], p.Spec.Hostname, ix, ix)
		}
		env := p.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef == nil ||
			env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			t.Errorf("pod %s env %+v, want JOB_COMPLETION_INDEX from the annotation", p.Name, env)
		}
	}
	if len(byIndex) != 3 || byIndex["0"].Name == "" || byIndex["1"].Name == "" || byIndex["2"].Name == "" {
		t.Fatalf("indexes %v, want 0, 1, 2", byIndex)
	}
	finish(t, c, byIndex["1"], 0)
	finish(t, c, byIndex["2"], 0)
	testwait.For(t, wait, "completedIndexes 1-2", func() (bool, string) {
		got, _ := c.BatchV1().Jobs("default").Get(context.Background(), "idx", metav1.GetOptions{})
		return got.Status.CompletedIndexes == "1-2" && got.Status.Succeeded == 2, fmt.Sprintf("%+v", got.Status)
	})
	// A failed index is retried with a new pod of the same index.
	finish(t, c, byIndex["0"], 1)
	again := activePods(t, c, j, 1)[0]
	if again.Annotations[batchv1.JobCompletionIndexAnnotation] != "0" || !strings.HasPrefix(again.Name, "idx-0-") {
		t.Fatalf("replacement %s with index %q, want index 0", again.Name, again.Annotations[batchv1.JobCompletionIndexAnnotation])
	}
	finish(t, c, again, 0)
	got := finishedJob(t, c, j, batchv1.JobComplete)
	if got.Status.CompletedIndexes != "0-2" || got.Status.Succeeded != 3 || got.Status.Failed != 1 {
		t.Errorf("status %+v, want indexes 0-2, 3 succeeded, 1 failed", got.Status)
	}
}

func TestActiveDeadline_G6(t *testing.T) {
	t.Parallel()
	c := start(t)
	j := newJob("slow", 2, 2)
	j.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	j = create(t, c, j)
	got := finishedJob(t, c, j, batchv1.JobFailed)
	if s := conditions(got); s != "FailureTarget=True/DeadlineExceeded,Failed=True/DeadlineExceeded" {
		t.Errorf("conditions %s, want FailureTarget then Failed, reason DeadlineExceeded", s)
	}
	if got.Status.Conditions[1].Message != "Job was active longer than specified deadline" {
		t.Errorf("message %q", got.Status.Conditions[1].Message)
	}
	if st := got.Status; st.Active != 0 || st.Failed != 2 || ptr.Deref(st.Terminating, -1) != 0 {
		t.Errorf("status %+v, want its 2 pods counted failed, none active", st)
	}
	testwait.For(t, wait, "the pods deleted", func() (bool, string) {
		n := len(podsOf(t, c, j))
		return n == 0, fmt.Sprintf("%d pods", n)
	})
}

func TestSuspendAndResume_G6(t *testing.T) {
	t.Parallel()
	c := start(t)
	j := newJob("later", 2, 2)
	j.Spec.Suspend = ptr.To(true)
	j = create(t, c, j)
	testwait.For(t, wait, "Suspended condition", func() (bool, string) {
		got, _ := c.BatchV1().Jobs("default").Get(context.Background(), "later", metav1.GetOptions{})
		return conditions(got) == "Suspended=True/JobSuspended", conditions(got)
	})
	got, _ := c.BatchV1().Jobs("default").Get(context.Background(), "later", metav1.GetOptions{})
	if n := len(podsOf(t, c, j)); n != 0 || got.Status.StartTime != nil {
		t.Errorf("suspended: %d pods, startTime %v; want none", n, got.Status.StartTime)
	}
	setSuspend(t, c, "later", false)
	activePods(t, c, j, 2)
	testwait.For(t, wait, "Suspended False, startTime", func() (bool, string) {
		got, _ := c.BatchV1().Jobs("default").Get(context.Background(), "later", metav1.GetOptions{})
		return conditions(got) == "Suspended=False/JobResumed" && got.Status.StartTime != nil, conditions(got)
	})
	// Suspended again: its pods go, uncounted.
	setSuspend(t, c, "later", true)
	testwait.For(t, wait, "pods deleted on suspension", func() (bool, string) {
		n := len(podsOf(t, c, j))
		return n == 0, fmt.Sprintf("%d pods", n)
	})
	waitEvent(t, c, j, "Normal", "Resumed", "Job resumed")
	waitEvent(t, c, j, "Normal", "SuccessfulDelete", "Deleted pod: later-")
	got, err := c.BatchV1().Jobs("default").Get(context.Background(), "later", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if got.Status.Failed != 0 {
		t.Errorf("failed %d after suspension, want 0", got.Status.Failed)
	}
}

// setSuspend sets the Job's spec.suspend as a client does: read, change,
// write, and again when the controller's status write came in between.
func setSuspend(t *testing.T, c kubernetes.Interface, name string, suspend bool) {
	t.Helper()
	jobs := c.BatchV1().Jobs("default")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := jobs.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Spec.Suspend = ptr.To(suspend)
		_, err = jobs.Update(context.Background(), got, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("set suspend=%v on job %s: %v", suspend, name, err)
	}
}

func TestOrphanAdoptedAndCounted_G6(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "done-before", Namespace: "default", Labels: map[string]string{"app": "adopt"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "work", Image: "busybox"}}}}
	orphan, err := c.CoreV1().Pods("default").Create(ctx, orphan, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finish(t, c, *orphan, 0)
	j := newJob("adopt", 1, 1)
	j.Spec.ManualSelector = ptr.To(true)
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "adopt"}}
	j = create(t, c, j)
	got := finishedJob(t, c, j, batchv1.JobComplete)
	if got.Status.Succeeded != 1 {
		t.Errorf("succeeded %d, want the adopted pod's 1", got.Status.Succeeded)
	}
	pods := podsOf(t, c, j)
	if len(pods) != 1 || pods[0].Name != "done-before" {
		t.Errorf("pods of the job: %v, want only the adopted done-before", pods)
	}
	noFinalizers(t, c, j)
}
