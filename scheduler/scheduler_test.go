package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/scheduler/explain"
	"github.com/kubegate/kubegate/scheduler/framework"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

func testNode(name, cpu string, labels ...string) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110"),
		}},
	}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	return n
}

func testPod(name, cpu string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Spec: v1.PodSpec{SchedulerName: framework.DefaultSchedulerName, Containers: []v1.Container{{Name: "app", Image: "kube-easy",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("128Mi")}}}}},
	}
}

type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	sched  *Scheduler
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs a scheduler with the default profile against a fake
// clientset holding objs. Bindings behave as kube-apiserver's: they set
// spec.nodeName and copy the binding's annotations to the pod.
func start(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	return startWith(t, nil, objs...)
}

// startWith is start with edit applied to the scheduler's Config.
func startWith(t *testing.T, edit func(*Config), objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*v1.Binding)
		obj, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		if p.Spec.NodeName != "" {
			return true, nil, fmt.Errorf("pod %s is already assigned to node %q", p.Name, p.Spec.NodeName)
		}
		p.Spec.NodeName = b.Target.Name
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for k, v := range b.Annotations {
			p.Annotations[k] = v
		}
		return true, b, client.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	prof, err := plugins.DefaultProfile(plugins.Args{Spread: NewSpreadSources(factory)})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, client: client, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), done: make(chan struct{})}
	cfg := Config{Client: client, Profile: prof, Clock: h.clock, Factory: factory,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), IntN: func(int) int { return 1 }}
	if edit != nil {
		edit(&cfg)
	}
	h.sched, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		if err := h.sched.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); <-h.done })
	return h
}

func (h *harness) create(objs ...runtime.Object) {
	h.t.Helper()
	for _, o := range objs {
		var err error
		switch x := o.(type) {
		case *v1.Pod:
			_, err = h.client.CoreV1().Pods(x.Namespace).Create(context.Background(), x, metav1.CreateOptions{})
		case *v1.Node:
			_, err = h.client.CoreV1().Nodes().Create(context.Background(), x, metav1.CreateOptions{})
		}
		if err != nil {
			h.t.Fatal(err)
		}
	}
}

// waitFor polls the fake API (the scheduler works asynchronously) until
// cond holds for the pod, or fails after 10 s.
func (h *harness) waitFor(name string, what string, cond func(*v1.Pod) bool) *v1.Pod {
	h.t.Helper()
	var p *v1.Pod
	testwait.For(h.t, 10*time.Second, "pod "+name+" "+what, func() (bool, string) {
		var err error
		p, err = h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && cond(p), fmt.Sprintf("not (last: %+v, %v)", p, err)
	})
	return p
}

func (h *harness) bound(name string) string {
	h.t.Helper()
	return h.waitFor(name, "bound", func(p *v1.Pod) bool { return p.Spec.NodeName != "" }).Spec.NodeName
}

// events returns the events about pod name, waiting up to 10 s for the
// first: the scheduler records them after binding or failing, so they may
// trail what the test has observed.
func (h *harness) events(name string) []v1.Event {
	h.t.Helper()
	var out []v1.Event
	for deadline := time.Now().Add(10 * time.Second); len(out) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		out = h.listEvents(name)
	}
	return out
}

func (h *harness) listEvents(name string) []v1.Event {
	list, err := h.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []v1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func TestScenarioTaintsAndTolerations(t *testing.T) {
	t.Parallel()
	gpu := testNode("gpu", "8", "hw", "gpu")
	gpu.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	h := start(t, gpu, testNode("plain", "2"))
	tolerant := testPod("tolerant", "100m")
	tolerant.Spec.NodeSelector = map[string]string{"hw": "gpu"}
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	h.create(testPod("plain-pod", "100m"), tolerant)
	if got := h.bound("plain-pod"); got != "plain" {
		t.Errorf("untolerating pod bound to %s, want plain (gpu is tainted)", got)
	}
	if got := h.bound("tolerant"); got != "gpu" {
		t.Errorf("tolerating pod bound to %s, want gpu", got)
	}
	ev := h.events("plain-pod")
	if len(ev) != 1 || ev[0].Reason != "Scheduled" || !strings.HasPrefix(ev[0].Message, "Successfully assigned default/plain-pod to plain") {
		t.Errorf("events: %+v", ev)
	}
	e, err := ExplainPod(context.Background(), h.client, "default", "plain-pod")
	if err != nil {
		t.Fatal(err)
	}
	if e.Node != "plain" || e.RejectedCounts["node(s) had untolerated taint {dedicated: gpu}"] != 1 {
		t.Errorf("explanation: %+v", e)
	}
}

func TestScenarioNodeAffinity(t *testing.T) {
	t.Parallel()
	h := start(t, testNode("a", "4", "zone", "a", "disk", "hdd"), testNode("b", "4", "zone", "b", "disk", "ssd"), testNode("c", "4", "zone", "c", "disk", "ssd"))
	p := testPod("affine", "100m")
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a", "c"}}}}}},
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 50, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}},
	}}
	h.create(p)
	if got := h.bound("affine"); got != "c" {
		t.Errorf("bound to %s, want c (required zone a|c, preferred ssd)", got)
	}
}

func TestScenarioHostPortConflict(t *testing.T) {
	t.Parallel()
	withPort := func(p *v1.Pod) *v1.Pod {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 2580, HostPort: 2580}}
		return p
	}
	existing := withPort(testPod("first", "100m"))
	existing.Spec.NodeName = "a"
	h := start(t, testNode("a", "8"), testNode("b", "2"), existing)
	h.create(withPort(testPod("second", "100m")))
	if got := h.bound("second"); got != "b" {
		t.Errorf("bound to %s, want b (a has host port 2580 taken)", got)
	}
}

func TestScenarioResourceExhaustion(t *testing.T) {
	t.Parallel()
	h := start(t, testNode("a", "2"), testNode("b", "2"), testNode("c", "2"))
	h.create(testPod("huge", "1000"))
	want := "0/3 nodes are available: 3 Insufficient cpu."
	p := h.waitFor("huge", "PodScheduled=False", func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
				return true
			}
		}
		return false
	})
	c := p.Status.Conditions[0]
	if c.Reason != v1.PodReasonUnschedulable || c.Message != want {
		t.Errorf("condition %s/%q, want Unschedulable/%q", c.Reason, c.Message, want)
	}
	ev := h.events("huge")
	if len(ev) != 1 || ev[0].Type != v1.EventTypeWarning || ev[0].Reason != "FailedScheduling" || ev[0].Message != want {
		t.Fatalf("events %+v, want one Warning FailedScheduling %q", ev, want)
	}
	e, err := explain.ParseAnnotation(p.Annotations[explain.AnnotationKey])
	if err != nil || e.RejectedCounts["Insufficient cpu"] != 3 || e.Error != want {
		t.Errorf("annotation: %+v, %v", e, err)
	}
	if _, _, u := h.sched.Queue().Len(); u != 1 {
		t.Errorf("unschedulable queue holds %d pods, want 1", u)
	}
	// A node big enough joins: the pod waits out its 1 s backoff, then
	// lands there.
	h.create(testNode("big", "2000"))
	testwait.For(t, 10*time.Second, "pod in backoff after the node was added", func() (bool, string) {
		_, b, _ := h.sched.Queue().Len()
		return b == 1, fmt.Sprintf("%d pods in backoff", b)
	})
	h.clock.Step(2 * time.Second)
	if got := h.bound("huge"); got != "big" {
		t.Errorf("bound to %s after the node was added, want big", got)
	}
}

func TestScenarioReplicasSpread(t *testing.T) {
	t.Parallel()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	h := start(t, rs, testNode("a", "4"), testNode("b", "4"), testNode("c", "4"))
	yes := true
	seen := map[string]string{}
	for i := range 3 {
		p := testPod(fmt.Sprintf("web-%d", i), "0")
		p.Labels["app"] = "web"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: &yes}}
		h.create(p)
		n := h.bound(p.Name)
		if prev, dup := seen[n]; dup {
			t.Errorf("%s and %s both on node %s", prev, p.Name, n)
		}
		seen[n] = p.Name
	}
}

func TestQueueBackoff(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	q := NewQueue(clk, 0, 0)
	p := testPod("p", "1")
	q.Add(p)
	for attempt, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		got, n, ok := q.Pop(context.Background())
		if !ok || got.Name != "p" || n != attempt+1 {
			t.Fatalf("pop: %v %d %v", got, n, ok)
		}
		q.Backoff(p)
		clk.Step(want - time.Millisecond)
		q.FlushBackoff()
		if a, b, _ := q.Len(); a != 0 || b != 1 {
			t.Fatalf("attempt %d: active %d backoff %d before %s elapsed", n, a, b, want)
		}
		clk.Step(time.Millisecond)
		q.FlushBackoff()
		if a, _, _ := q.Len(); a != 1 {
			t.Fatalf("attempt %d: not active after %s", n, want)
		}
	}
	hi := testPod("hi", "1")
	prio := int32(10)
	hi.Spec.Priority = &prio
	q.Add(hi)
	if got, _, _ := q.Pop(context.Background()); got.Name != "hi" {
		t.Errorf("popped %s, want the higher-priority pod first", got.Name)
	}
}

// A pod tried against the cluster as it was before a change (a node
// untainted while the pod was being scheduled) does not wait for another
// change: it only waits out its backoff. A pod popped after the change
// waits as unschedulable.
func TestQueueChangeDuringAttemptIsNotLost_E5(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	q := NewQueue(clk, 0, 0)
	p := testPod("p", "1")
	q.Add(p)
	if _, _, ok := q.Pop(context.Background()); !ok {
		t.Fatal("pop")
	}
	q.MoveAllToActiveOrBackoff() // the cluster changed during the attempt
	q.Unschedulable(p)
	if a, b, u := q.Len(); a != 0 || b != 1 || u != 0 {
		t.Fatalf("active %d backoff %d unschedulable %d, want the pod in backoff", a, b, u)
	}
	clk.Step(time.Second)
	q.FlushBackoff()
	if _, _, ok := q.Pop(context.Background()); !ok {
		t.Fatal("the pod did not come back after its backoff")
	}
	q.Unschedulable(p) // no change since this attempt began
	if a, b, u := q.Len(); a != 0 || b != 0 || u != 1 {
		t.Fatalf("active %d backoff %d unschedulable %d, want the pod unschedulable", a, b, u)
	}
}

// While MaxInFlight bindings are in flight, the scheduler takes no pod
// from the queue; when one finishes, it schedules and binds the next.
func TestBindingsInFlightAreBounded(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	prof, err := plugins.DefaultProfile(plugins.Args{Spread: NewSpreadSources(factory)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Client: client, Profile: prof, Factory: factory, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.onNode(testNode("a", "4"))
	p := testPod("waiting", "100m")
	if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
		t.Fatal(err)
	}
	s.onPod(p)
	for range MaxInFlight {
		s.inflight <- struct{}{}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- s.ScheduleOne(ctx) }()
	cancel()
	if <-done {
		t.Fatal("ScheduleOne scheduled a pod with MaxInFlight bindings in flight")
	}
	if active, _, _ := s.queue.Len(); active != 1 {
		t.Fatalf("active queue holds %d pods, want the waiting one", active)
	}

	<-s.inflight // one binding finished
	if !s.ScheduleOne(context.Background()) {
		t.Fatal("ScheduleOne returned false with room in flight")
	}
	s.wg.Wait()
	var binds int
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" && a.GetSubresource() == "binding" {
			binds++
		}
	}
	if binds != 1 {
		t.Fatalf("got %d bindings, want 1", binds)
	}
	if got := len(s.inflight); got != MaxInFlight-1 {
		t.Fatalf("%d slots taken after the binding, want %d", got, MaxInFlight-1)
	}
}

// kube-scheduler records events with a client of its own, so that they do
// not take from the bindings' rate limit: with EventClient set, the
// Scheduled event goes there and nothing but the binding to Client.
func TestEventsGoThroughTheEventClient(t *testing.T) {
	t.Parallel()
	events := fake.NewClientset()
	h := startWith(t, func(c *Config) { c.EventClient = events }, testNode("n1", "4"))
	h.create(testPod("p", "100m"))
	h.bound("p")
	testwait.For(t, 10*time.Second, "a Scheduled event through the event client", func() (bool, string) {
		list, err := events.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.Items[0].Reason != "Scheduled" || list.Items[0].InvolvedObject.Name != "p" {
			return false, fmt.Sprintf("events %+v, %v", list, err)
		}
		return true, ""
	})
	if got := h.listEvents("p"); len(got) != 0 {
		t.Errorf("events through the scheduler's client: %+v; want none", got)
	}
}
