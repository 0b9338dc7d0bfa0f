package nodesim

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubegate/kubegate/internal/testwait"
)

// createPod creates a pod on node-1 of c with annotations and restart
// policy.
func createPod(t *testing.T, c *fakeCluster, name string, policy corev1.RestartPolicy, annotations map[string]string) {
	t.Helper()
	p := newPod(name, "node-1", "app", "helper")
	p.Annotations = annotations
	p.Spec.RestartPolicy = policy
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitWoken waits until the simulator has seen pod name Running and set
// itself a wake-up at at, so that moving the clock reaches it.
func waitWoken(t *testing.T, s *Simulator, name string, at time.Time) {
	t.Helper()
	testwait.For(t, 10*time.Second, name+" waiting for "+at.String(), func() (bool, string) {
		p, err := s.pods.pods.Pods("default").Get(name)
		if err != nil {
			return false, err.Error()
		}
		s.pods.mu.Lock()
		defer s.pods.mu.Unlock()
		w := s.pods.wake[p.UID]
		return w.Equal(at), fmt.Sprintf("phase %s, wake %v", p.Status.Phase, w)
	})
}

func waitPod(t *testing.T, c *fakeCluster, name, what string, ok func(p *corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	testwait.For(t, 10*time.Second, name+" "+what, func() (bool, string) {
		p = getPod(t, c, name)
		return ok(p), fmt.Sprintf("phase %s, conditions %v, containers %+v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
	return p
}

func TestReadyAfter_G13(t *testing.T) {
	t.Parallel()
	c := newFakeCluster()
	s, clk := start(t, c, Options{Count: 1})
	createPod(t, c, "slow", corev1.RestartPolicyAlways, map[string]string{AnnotationReadyAfter: "5s"})
	p := waitPod(t, c, "slow", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if got := condition(p.Status.Conditions, corev1.PodReady); got != "False" {
		t.Errorf("Ready = %s before ready-after, want False", got)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready || cs.Started == nil || !*cs.Started || cs.State.Running == nil {
			t.Errorf("container %s before ready-after: %+v, want started, running, not ready", cs.Name, cs)
		}
	}
	waitWoken(t, s, "slow", epoch.Add(5*time.Second))
	clk.Step(5 * time.Second)
	p = waitPod(t, c, "slow", "Ready", func(p *corev1.Pod) bool { return condition(p.Status.Conditions, corev1.PodReady) == "True" })
	if condition(p.Status.Conditions, corev1.ContainersReady) != "True" || !p.Status.ContainerStatuses[0].Ready || !p.Status.ContainerStatuses[1].Ready {
		t.Errorf("after ready-after: conditions %v, containers %+v; want ContainersReady and every container ready",
			p.Status.Conditions, p.Status.ContainerStatuses)
	}
}

func TestCompleteAfterByRestartPolicy_G13(t *testing.T) {
	t.Parallel()
	c := newFakeCluster()
	// The node's defaults: exit with 2 after 20 s.
	s, clk := start(t, c, Options{Count: 1, CompleteAfter: 20 * time.Second, ExitCode: 2})
	in10 := map[string]string{AnnotationCompleteAfter: "10s", AnnotationExitCode: "0"}
	for _, tc := range []struct {
		name   string
		policy corev1.RestartPolicy
		ann    map[string]string
	}{
		{"ok", corev1.RestartPolicyNever, in10},
		{"fails", corev1.RestartPolicyNever, map[string]string{AnnotationCompleteAfter: "10s", AnnotationExitCode: "3"}},
		{"always", corev1.RestartPolicyAlways, in10},
		{"onfailure-ok", corev1.RestartPolicyOnFailure, in10},
		{"onfailure-fails", corev1.RestartPolicyOnFailure, map[string]string{AnnotationCompleteAfter: "10s", AnnotationExitCode: "1"}},
		{"defaults", corev1.RestartPolicyNever, nil},
		{"bad", corev1.RestartPolicyNever, map[string]string{AnnotationCompleteAfter: "soon", AnnotationExitCode: "-1", AnnotationReadyAfter: "x"}},
	} {
		createPod(t, c, tc.name, tc.policy, tc.ann)
		at := epoch.Add(10 * time.Second)
		if tc.ann[AnnotationCompleteAfter] != "10s" {
			at = epoch.Add(20 * time.Second)
		}
		waitWoken(t, s, tc.name, at)
	}
	clk.Step(10 * time.Second)
	terminated := func(p *corev1.Pod, code int32, reason string) {
		t.Helper()
		for _, cs := range p.Status.ContainerStatuses {
			if tm := cs.State.Terminated; tm == nil || tm.ExitCode != code || tm.Reason != reason || cs.Ready ||
				!tm.FinishedAt.Time.Equal(clk.Now()) || !tm.StartedAt.Time.Equal(epoch) {
				t.Errorf("%s container %s: %+v, want terminated %d %s at %v", p.Name, cs.Name, cs.State, code, reason, clk.Now())
			}
		}
		if condition(p.Status.Conditions, corev1.PodReady) != "False" {
			t.Errorf("%s Ready = %s, want False", p.Name, condition(p.Status.Conditions, corev1.PodReady))
		}
	}
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool { return p.Status.Phase == ph }
	}
	terminated(waitPod(t, c, "ok", "Succeeded", phase(corev1.PodSucceeded)), 0, "Completed")
	terminated(waitPod(t, c, "onfailure-ok", "Succeeded", phase(corev1.PodSucceeded)), 0, "Completed")
	terminated(waitPod(t, c, "fails", "Failed", phase(corev1.PodFailed)), 3, "Error")
	// A finished pod keeps its podIP in status, but its address is free.
	testwait.For(t, 10*time.Second, "ok's address released", func() (bool, string) {
		s.pods.mu.Lock()
		defer s.pods.mu.Unlock()
		_, held := s.pods.ips["uid-ok"]
		return !held, "held"
	})
	if p := getPod(t, c, "ok"); p.Status.PodIP == "" {
		t.Error("finished pod ok lost its podIP in status")
	}
	for _, name := range []string{"always", "onfailure-fails"} {
		p := waitPod(t, c, name, "restarted", func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount == 1 })
		for _, cs := range p.Status.ContainerStatuses {
			last := cs.LastTerminationState.Terminated
			if p.Status.Phase != corev1.PodRunning || cs.RestartCount != 1 || cs.State.Running == nil ||
				!cs.State.Running.StartedAt.Time.Equal(clk.Now()) || last == nil || !cs.Ready {
				t.Errorf("%s container %s after its exit: phase %s, %+v; want Running, restarted once, ready", name, cs.Name, p.Status.Phase, cs)
			}
		}
	}
	// Those on the node's defaults have 10 s to go; a bad annotation is
	// as none.
	for _, name := range []string{"defaults", "bad"} {
		if p := getPod(t, c, name); p.Status.Phase != corev1.PodRunning || condition(p.Status.Conditions, corev1.PodReady) != "True" {
			t.Errorf("%s after 10 s: phase %s, Ready %s; want Running and Ready", name, p.Status.Phase, condition(p.Status.Conditions, corev1.PodReady))
		}
	}
	// The restarted ones run another 10 s.
	waitWoken(t, s, "always", epoch.Add(20*time.Second))
	clk.Step(10 * time.Second)
	terminated(waitPod(t, c, "defaults", "Failed", phase(corev1.PodFailed)), 2, "Error")
	terminated(waitPod(t, c, "bad", "Failed", phase(corev1.PodFailed)), 2, "Error")
	waitPod(t, c, "always", "restarted twice", func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount == 2 })
	s.pods.mu.Lock()
	warned := len(s.pods.warned)
	s.pods.mu.Unlock()
	if warned != 3 {
		t.Errorf("%d bad annotations recorded, want 3", warned)
	}
}

func TestPodsOfAGoneNodeStayAsTheyAre_G13(t *testing.T) {
	t.Parallel()
	c := newFakeCluster()
	// One worker takes the pods in the order their wake-ups fire.
	s, clk := start(t, c, Options{Count: 2, Workers: 1, StatusInterval: 5 * time.Second})
	ann := map[string]string{AnnotationCompleteAfter: "10s"}
	createPod(t, c, "stranded", corev1.RestartPolicyNever, ann) // on node-1
	waitWoken(t, s, "stranded", epoch.Add(10*time.Second))
	alive := newPod("alive", "node-2", "app")
	alive.Annotations, alive.Spec.RestartPolicy = ann, corev1.RestartPolicyNever
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), alive, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWoken(t, s, "alive", epoch.Add(10*time.Second))
	// node-1's Node is deleted; its next status write finds it gone.
	if err := c.CoreV1().Nodes().Delete(context.Background(), "node-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(5 * time.Second)
	testwait.For(t, 10*time.Second, "node-1 gone", func() (bool, string) { return s.nodes["node-1"].gone.Load(), "simulated" })
	clk.Step(5 * time.Second)
	waitPod(t, c, "alive", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if p := getPod(t, c, "stranded"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("the gone node's pod is %s, want still Running", p.Status.Phase)
	}
}

// A pod's containers exit again before the simulator's watch has shown it
// their last restart: the exit is the second, not the first once more.
func TestRestartSeenLateByTheWatch_G13(t *testing.T) {
	t.Parallel()
	c := newFakeCluster()
	s, clk := start(t, c, Options{Count: 1})
	createPod(t, c, "always", corev1.RestartPolicyAlways, map[string]string{AnnotationCompleteAfter: "10s"})
	waitWoken(t, s, "always", epoch.Add(10*time.Second))
	release := c.holdPodEvents()
	defer release()
	clk.Step(10 * time.Second)
	restartedAt := clk.Now()
	waitPod(t, c, "always", "restarted", func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount == 1 })
	waitWoken(t, s, "always", epoch.Add(20*time.Second))
	clk.Step(10 * time.Second)
	// The simulator has worked out the second exit, on the pod as its
	// watch still shows it, from before the first.
	waitWoken(t, s, "always", epoch.Add(30*time.Second))
	release()
	p := waitPod(t, c, "always", "restarted twice", func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount == 2 })
	for _, cs := range p.Status.ContainerStatuses {
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount != 2 || cs.State.Running == nil || !cs.State.Running.StartedAt.Time.Equal(clk.Now()) ||
			last == nil || !last.StartedAt.Time.Equal(restartedAt) || !last.FinishedAt.Time.Equal(clk.Now()) {
			t.Errorf("container %s: %+v; want restarted twice, running since %v, last run from %v to then", cs.Name, cs, clk.Now(), restartedAt)
		}
	}
}

// pausingClock is a fake clock one reading of which can be made to wait
// for the test, so that the test moves the clock between the simulator
// reading the time and acting on it.
type pausingClock struct {
	*testingclock.FakeClock
	mu    sync.Mutex
	pause *clockPause
}

// clockPause is one paused reading: read is closed once it is taken,
// and the reader waits until resume is closed.
type clockPause struct {
	caller       string // the function whose reading is paused
	read, resume chan struct{}
}

// pauseRead pauses the next reading that caller (a function name, such as
// "(*podSync).progress") makes.
func (c *pausingClock) pauseRead(caller string) *clockPause {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pause = &clockPause{caller: caller, read: make(chan struct{}), resume: make(chan struct{})}
	return c.pause
}

func (c *pausingClock) Now() time.Time {
	now := c.FakeClock.Now()
	c.mu.Lock()
	p := c.pause
	if p != nil {
		pc, _, _, _ := runtime.Caller(1)
		if fn := runtime.FuncForPC(pc); fn == nil || !strings.HasSuffix(fn.Name(), "."+p.caller) {
			p = nil
		}
	}
	if p != nil {
		c.pause = nil
	}
	c.mu.Unlock()
	if p != nil {
		close(p.read)
		<-p.resume
	}
	return now
}

// The clock moves on while the simulator works out when a pod that has
// just started running is next due: the wake-up is for the time the pod is
// due, not as long after the move.
func TestStepWhileTheNextWakeIsWorkedOut_G13(t *testing.T) {
	t.Parallel()
	c := newFakeCluster()
	clk := &pausingClock{FakeClock: testingclock.NewFakeClock(epoch)}
	run(t, c, Options{Count: 1, Clock: clk})
	pause := clk.pauseRead("(*podSync).progress")
	createPod(t, c, "job", corev1.RestartPolicyNever, map[string]string{AnnotationCompleteAfter: "10s"})
	select {
	case <-pause.read:
	case <-time.After(10 * time.Second):
		t.Fatal("the simulator did not read the clock for the running pod within 10 s")
	}
	clk.Step(10 * time.Second)
	close(pause.resume)
	p := waitPod(t, c, "job", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if tm := p.Status.ContainerStatuses[0].State.Terminated; tm == nil || !tm.FinishedAt.Time.Equal(clk.Now()) {
		t.Errorf("container app: %+v, want terminated at %v", p.Status.ContainerStatuses[0].State, clk.Now())
	}
}

func TestPodRunTime_G13(t *testing.T) {
	t.Parallel()
	c := newFakeCluster()
	s, clk := start(t, c, Options{Count: 1, PodRunTime: 2 * time.Second})
	for _, tc := range []struct {
		name   string
		policy corev1.RestartPolicy
		ann    map[string]string
		wake   time.Duration // 0: none
	}{
		{"job", corev1.RestartPolicyNever, nil, 2 * time.Second},
		{"onfailure", corev1.RestartPolicyOnFailure, nil, 2 * time.Second},
		{"failing", corev1.RestartPolicyNever, map[string]string{AnnotationExitCode: "4"}, 2 * time.Second},
		{"annotated", corev1.RestartPolicyNever, map[string]string{AnnotationCompleteAfter: "10s"}, 10 * time.Second},
		{"always", corev1.RestartPolicyAlways, nil, 0},
		{"always-exit-code", corev1.RestartPolicyAlways, map[string]string{AnnotationExitCode: "4"}, 0},
	} {
		createPod(t, c, tc.name, tc.policy, tc.ann)
		if tc.wake > 0 {
			waitWoken(t, s, tc.name, epoch.Add(tc.wake))
		} else {
			waitPod(t, c, tc.name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		}
	}
	clk.Step(2 * time.Second)
	finished := func(name string, phase corev1.PodPhase, code int32, reason string) {
		t.Helper()
		p := waitPod(t, c, name, string(phase), func(p *corev1.Pod) bool { return p.Status.Phase == phase })
		for _, cs := range p.Status.ContainerStatuses {
			if tm := cs.State.Terminated; tm == nil || tm.ExitCode != code || tm.Reason != reason {
				t.Errorf("%s container %s: %+v, want terminated %d %s", name, cs.Name, cs.State, code, reason)
			}
		}
	}
	finished("job", corev1.PodSucceeded, 0, "Completed")
	finished("onfailure", corev1.PodSucceeded, 0, "Completed")
	finished("failing", corev1.PodFailed, 4, "Error")
	// The annotation wins over the run time; pods that restart Always run
	// on, exit code or not.
	clk.Step(5 * time.Second)
	for _, name := range []string{"annotated", "always", "always-exit-code"} {
		if p := getPod(t, c, name); p.Status.Phase != corev1.PodRunning || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("%s after 7 s: phase %s, restarts %d; want Running, never restarted", name, p.Status.Phase, p.Status.ContainerStatuses[0].RestartCount)
		}
	}
	s.pods.mu.Lock()
	for _, name := range []string{"always", "always-exit-code"} {
		if w := s.pods.wake[types.UID("uid-"+name)]; !w.IsZero() {
			t.Errorf("%s has a wake-up at %v, want none", name, w)
		}
	}
	s.pods.mu.Unlock()
	clk.Step(3 * time.Second)
	finished("annotated", corev1.PodSucceeded, 0, "Completed")
}
