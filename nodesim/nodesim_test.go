package nodesim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/internal/testwait"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeCluster is a fake clientset that, as the API server does, sets UIDs
// on create, gives every object it writes a new resourceVersion and refuses
// an update made on an older one; and whose pod watch signals when it is
// open, so that tests create pods only once the simulator can see them.
// Its pod watch can be made to lag (holdPodEvents), as an informer lags
// behind a busy API server.
type fakeCluster struct {
	*fake.Clientset
	watching chan struct{}

	mu      sync.Mutex
	version int64         // the last resourceVersion handed out
	held    chan struct{} // while not nil, pod watch events wait until it is closed
}

func newFakeCluster(objs ...runtime.Object) *fakeCluster {
	c := &fakeCluster{Clientset: fake.NewClientset(objs...), watching: make(chan struct{})}
	c.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if acc, err := meta.Accessor(a.(clienttesting.CreateAction).GetObject()); err == nil {
			if acc.GetUID() == "" {
				acc.SetUID(types.UID("uid-" + acc.GetName()))
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			acc.SetResourceVersion(c.nextVersion())
		}
		return false, nil, nil
	})
	c.PrependReactor("update", "*", c.update)
	var once sync.Once
	c.PrependWatchReactor("pods", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(clienttesting.WatchActionImpl).ListOptions)
		once.Do(func() { close(c.watching) })
		if err != nil {
			return true, nil, err
		}
		return true, c.lagging(w), nil
	})
	return c
}

func (c *fakeCluster) nextVersion() string {
	c.version++
	return strconv.FormatInt(c.version, 10)
}

// update writes an object, or its status, with a new resourceVersion, if
// the update names none or the one stored; otherwise it is a conflict.
func (c *fakeCluster) update(a clienttesting.Action) (bool, runtime.Object, error) {
	obj := a.(clienttesting.UpdateAction).GetObject().DeepCopyObject()
	acc, err := meta.Accessor(obj)
	if err != nil {
		return false, nil, nil
	}
	gvr, ns, name := a.GetResource(), a.GetNamespace(), acc.GetName()
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, err := c.Tracker().Get(gvr, ns, name)
	if err != nil {
		return true, nil, err
	}
	if curAcc, err := meta.Accessor(cur); err == nil && acc.GetResourceVersion() != "" && acc.GetResourceVersion() != curAcc.GetResourceVersion() {
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	acc.SetResourceVersion(c.nextVersion())
	if err := c.Tracker().Update(gvr, obj, ns); err != nil {
		return true, nil, err
	}
	return true, obj, nil
}

// holdPodEvents keeps the pod watch's events back until release is
// called: the simulator's informer then shows pods as they were.
func (c *fakeCluster) holdPodEvents() (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	held := make(chan struct{})
	c.held = held
	return sync.OnceFunc(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.held == held {
			c.held = nil
		}
		close(held)
	})
}

func (c *fakeCluster) holding() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// laggingWatch passes on the events of the watch it wraps, in order, but
// none while its cluster holds pod events back.
type laggingWatch struct {
	watch.Interface
	events chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

func (c *fakeCluster) lagging(w watch.Interface) watch.Interface {
	lw := &laggingWatch{Interface: w, events: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(lw.events)
		var queue []watch.Event
		in := w.ResultChan()
		for in != nil || len(queue) > 0 {
			var out chan watch.Event
			var next watch.Event
			held := c.holding()
			if held == nil && len(queue) > 0 {
				out, next = lw.events, queue[0]
			}
			select {
			case ev, ok := <-in:
				if !ok {
					in = nil
					continue
				}
				queue = append(queue, ev)
			case out <- next:
				queue = queue[1:]
			case <-held:
			case <-lw.stop:
				return
			}
		}
	}()
	return lw
}

func (w *laggingWatch) ResultChan() <-chan watch.Event { return w.events }

func (w *laggingWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.Interface.Stop()
	})
}

// start runs a simulator on c with a fake clock until the test ends, and
// waits until it watches pods.
func start(t *testing.T, c *fakeCluster, o Options) (*Simulator, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(epoch)
	o.Clock = clk
	return run(t, c, o), clk
}

// run runs a simulator on c with the clock in o until the test ends, and
// waits until it watches pods.
func run(t *testing.T, c *fakeCluster, o Options) *Simulator {
	t.Helper()
	o.Logger = slog.New(slog.DiscardHandler)
	s, err := New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-c.watching:
	case err := <-done:
		t.Fatalf("Run ended early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no pod watch after 10 s")
	}
	return s
}

func getPod(t *testing.T, c *fakeCluster, name string) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newPod(name, node string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "registry.example:5000/team/" + c + ":1.0"})
	}
	return p
}

func condition(conds []corev1.PodCondition, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range conds {
		if c.Type == t {
			return c.Status
		}
	}
	return "absent"
}

func TestNodesRegistered(t *testing.T) {
	t.Parallel()
	// node-2 exists already: someone's label, cordon and pod CIDR stay.
	existing := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sim-2", UID: "uid-sim-2", Labels: map[string]string{"keep": "me"}},
		Spec: corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.99.0.0/24"}}
	c := newFakeCluster(existing)
	taints := []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	s, _ := start(t, c, Options{Count: 2, Prefix: "sim-", CPU: resource.MustParse("8"), Labels: map[string]string{"zone": "a"}, Taints: taints})
	if got := strings.Join(s.NodeNames(), ","); got != "sim-1,sim-2" {
		t.Fatalf("NodeNames() = %s, want sim-1,sim-2", got)
	}
	for i, name := range []string{"sim-1", "sim-2"} {
		t.Run(name, func(t *testing.T) {
			n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantLabels := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"node.kubernetes.io/instance-type": "simulated", "zone": "a"}
			if i == 1 {
				wantLabels["keep"] = "me"
			}
			for k, v := range wantLabels {
				if n.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
				}
			}
			if len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != taints[0] {
				t.Errorf("taints = %v, want %v", n.Spec.Taints, taints)
			}
			wantCIDR := fmt.Sprintf("10.244.%d.0/24", i)
			if i == 1 {
				wantCIDR = "10.99.0.0/24"
				if !n.Spec.Unschedulable {
					t.Error("the existing node's unschedulable was cleared")
				}
			}
			if n.Spec.PodCIDR != wantCIDR {
				t.Errorf("podCIDR = %s, want %s", n.Spec.PodCIDR, wantCIDR)
			}
			for _, list := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
				for res, want := range map[corev1.ResourceName]string{"cpu": "8", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"} {
					if q := list[res]; q.String() != want {
						t.Errorf("%s = %s, want %s", res, q.String(), want)
					}
				}
			}
			want := map[corev1.NodeConditionType]string{"Ready": "True KubeletReady", "MemoryPressure": "False KubeletHasSufficientMemory",
				"DiskPressure": "False KubeletHasNoDiskPressure", "PIDPressure": "False KubeletHasSufficientPID"}
			for _, cond := range n.Status.Conditions {
				if got := string(cond.Status) + " " + cond.Reason; got != want[cond.Type] || !cond.LastHeartbeatTime.Time.Equal(epoch) {
					t.Errorf("condition %s = %s at %v, want %s at %v", cond.Type, got, cond.LastHeartbeatTime, want[cond.Type], epoch)
				}
				delete(want, cond.Type)
			}
			if len(want) > 0 {
				t.Errorf("conditions missing: %v", want)
			}
			wantAddr := []corev1.NodeAddress{{Type: "InternalIP", Address: fmt.Sprintf("10.0.0.%d", i+1)}, {Type: "Hostname", Address: name}}
			if fmt.Sprint(n.Status.Addresses) != fmt.Sprint(wantAddr) {
				t.Errorf("addresses = %v, want %v", n.Status.Addresses, wantAddr)
			}
			if ni := n.Status.NodeInfo; ni.KubeletVersion != "v1.32.0-kubegate" || ni.OperatingSystem != "linux" || ni.Architecture != "amd64" {
				t.Errorf("nodeInfo = %+v", ni)
			}
			if len(n.Status.Images) != 3 || !strings.HasPrefix(n.Status.Images[0].Names[0], "registry.k8s.io/pause@sha256:") {
				t.Errorf("images = %v, want the 3 default images", n.Status.Images)
			}
			l, err := c.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *l.Spec.HolderIdentity != name || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(epoch) {
				t.Errorf("lease = holder %s, duration %d, renewed %v; want %s, 40, %v", *l.Spec.HolderIdentity,
					*l.Spec.LeaseDurationSeconds, l.Spec.RenewTime, name, epoch)
			}
			if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].Name != name {
				t.Errorf("lease owners = %v, want the node", l.OwnerReferences)
			}
		})
	}
}

func TestHeartbeats(t *testing.T) {
	t.Parallel()
	c := newFakeCluster()
	_, clk := start(t, c, Options{Count: 2, HeartbeatInterval: 10 * time.Second, StatusInterval: time.Minute})
	ctx := context.Background()
	renewed := func(name string, at time.Time) func() (bool, string) {
		return func() (bool, string) {
			l, err := c.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return l.Spec.RenewTime.Time.Equal(at), "renewed at " + l.Spec.RenewTime.String()
		}
	}
	for i := 1; i <= 3; i++ {
		clk.Step(10 * time.Second)
		for _, n := range []string{"node-1", "node-2"} {
			testwait.For(t, 10*time.Second, "lease "+n, renewed(n, clk.Now()))
		}
	}
	clk.Step(30 * time.Second) // a minute since registration
	testwait.For(t, 10*time.Second, "node-2 Ready heartbeat", func() (bool, string) {
		n, err := c.CoreV1().Nodes().Get(ctx, "node-2", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if !cond.LastTransitionTime.Time.Equal(epoch) {
					t.Fatalf("Ready lastTransitionTime moved to %v on a heartbeat", cond.LastTransitionTime)
				}
				return cond.LastHeartbeatTime.Time.Equal(clk.Now()), "heartbeat " + cond.LastHeartbeatTime.String()
			}
		}
		return false, "no Ready condition"
	})
}

func TestBoundPodRuns(t *testing.T) {
	t.Parallel()
	early := newPod("early", "node-2", "app") // bound before the simulator starts
	c := newFakeCluster(early)
	s, clk := start(t, c, Options{Count: 2, RunningDelay: 2 * time.Second})
	ctx := context.Background()

	web := newPod("web", "node-1", "app", "sidecar")
	web.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
	host := newPod("host", "node-1", "agent")
	host.Spec.HostNetwork = true
	for _, p := range []*corev1.Pod{web, host} {
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Before the delay: ContainerCreating on the node, no pod IP.
	for _, name := range []string{"early", "web", "host"} {
		// Seen so by the simulator too (its watch lags), so that it
		// builds Running on this status.
		testwait.For(t, 10*time.Second, name+" ContainerCreating", func() (bool, string) {
			p, err := s.pods.pods.Pods("default").Get(name)
			if err != nil {
				return false, err.Error()
			}
			return p.Status.HostIP != "", fmt.Sprintf("hostIP %q", p.Status.HostIP)
		})
		p := getPod(t, c, name)
		if p.Status.Phase != corev1.PodPending || p.Status.PodIP != "" || condition(p.Status.Conditions, corev1.PodReady) != "False" {
			t.Errorf("%s before the delay: phase %s, podIP %q, Ready %s; want Pending, none, False", name, p.Status.Phase,
				p.Status.PodIP, condition(p.Status.Conditions, corev1.PodReady))
		}
	}
	if w := getPod(t, c, "web").Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("web's app waiting = %v, want PodInitializing", w)
	}
	clk.Step(2 * time.Second)
	for _, tc := range []struct{ name, hostIP, podIP string }{
		{"early", "10.0.0.2", "10.244.1.2"},
		{"web", "10.0.0.1", "10.244.0.2"},
		{"host", "10.0.0.1", "10.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testwait.For(t, 10*time.Second, tc.name+" Running", func() (bool, string) {
				p := getPod(t, c, tc.name)
				return p.Status.Phase == corev1.PodRunning, "phase " + string(p.Status.Phase)
			})
			p := getPod(t, c, tc.name)
			st := p.Status
			if st.HostIP != tc.hostIP || st.PodIP != tc.podIP || len(st.PodIPs) != 1 || st.PodIPs[0].IP != tc.podIP {
				t.Errorf("hostIP %s, podIP %s (%v); want %s, %s", st.HostIP, st.PodIP, st.PodIPs, tc.hostIP, tc.podIP)
			}
			if st.StartTime == nil || !st.StartTime.Time.Equal(epoch) || st.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("startTime %v, qosClass %s; want %v, BestEffort", st.StartTime, st.QOSClass, epoch)
			}
			for _, ct := range []corev1.PodConditionType{"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"} {
				if got := condition(st.Conditions, ct); got != "True" {
					t.Errorf("condition %s = %s, want True", ct, got)
				}
			}
			if len(st.ContainerStatuses) != len(p.Spec.Containers) {
				t.Fatalf("%d container statuses for %d containers", len(st.ContainerStatuses), len(p.Spec.Containers))
			}
			for i, cs := range st.ContainerStatuses {
				c := p.Spec.Containers[i]
				if cs.Name != c.Name || cs.Image != c.Image || !cs.Ready || cs.Started == nil || !*cs.Started ||
					cs.State.Running == nil || !cs.State.Running.StartedAt.Time.Equal(clk.Now()) ||
					!strings.HasPrefix(cs.ContainerID, "kubegate://") ||
					cs.ImageID != imageID(c.Image) || !strings.HasPrefix(cs.ImageID, "registry.example:5000/team/"+c.Name+"@sha256:") {
					t.Errorf("container status %+v", cs)
				}
			}
		})
	}
	ic := getPod(t, c, "web").Status.InitContainerStatuses
	if len(ic) != 1 || ic[0].State.Terminated == nil || ic[0].State.Terminated.Reason != "Completed" || ic[0].State.Terminated.ExitCode != 0 {
		t.Errorf("init container statuses = %+v, want setup Completed", ic)
	}
}

func TestIgnoredPods(t *testing.T) {
	t.Parallel()
	unbound := newPod("unbound", "", "app")
	other := newPod("other", "real-node", "app")
	c := newFakeCluster(unbound, other)
	s, _ := start(t, c, Options{Count: 1, Workers: 1})
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), newPod("mine", "node-1", "app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "mine Running", func() (bool, string) {
		p := getPod(t, c, "mine")
		return p.Status.Phase == corev1.PodRunning, "phase " + string(p.Status.Phase)
	})
	for _, a := range c.Actions() {
		if n, ok := a.(clienttesting.UpdateAction); ok {
			if p, ok := n.GetObject().(*corev1.Pod); ok && p.Name != "mine" {
				t.Errorf("pod %s (node %q) was written: %s %s", p.Name, p.Spec.NodeName, a.GetVerb(), a.GetSubresource())
			}
		}
	}
	for _, p := range []*corev1.Pod{unbound, other} {
		if n := s.pods.node(p); n != nil {
			t.Errorf("pod %s (node %q) is taken as on simulated node %s", p.Name, p.Spec.NodeName, n.name)
		}
	}
}

func TestDeletedPodFinished(t *testing.T) {
	t.Parallel()
	gone := newPod("gone", "node-1", "app")
	gone.DeletionTimestamp = &metav1.Time{Time: epoch.Add(30 * time.Second)}
	gone.DeletionGracePeriodSeconds = ptr.To[int64](30)
	gone.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9", ContainerStatuses: []corev1.ContainerStatus{
		{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(epoch.Add(-time.Hour))}}}}}
	c := newFakeCluster(gone)
	var mu sync.Mutex
	var final *corev1.Pod
	c.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			mu.Lock()
			final = a.(clienttesting.UpdateAction).GetObject().(*corev1.Pod).DeepCopy()
			mu.Unlock()
		}
		return false, nil, nil
	})
	start(t, c, Options{Count: 1})
	testwait.For(t, 10*time.Second, "gone deleted", func() (bool, string) {
		_, err := c.CoreV1().Pods("default").Get(context.Background(), "gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
	mu.Lock()
	defer mu.Unlock()
	if final == nil {
		t.Fatal("no status written before the delete")
	}
	if cs := final.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].Ready ||
		!cs[0].State.Terminated.StartedAt.Time.Equal(epoch.Add(-time.Hour)) || final.Status.Phase != corev1.PodSucceeded {
		t.Errorf("final status: phase %s, containers %+v; want Succeeded, app terminated", final.Status.Phase, final.Status.ContainerStatuses)
	}
	var deletes []metav1.DeleteOptions
	for _, a := range c.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && d.GetResource().Resource == "pods" {
			deletes = append(deletes, d.GetDeleteOptions())
		}
	}
	if len(deletes) == 0 {
		t.Fatal("no pod delete")
	}
	d := deletes[0]
	if d.GracePeriodSeconds == nil || *d.GracePeriodSeconds != 0 || d.Preconditions == nil || d.Preconditions.UID == nil || *d.Preconditions.UID != "uid-gone" {
		t.Errorf("delete options = %+v, want grace 0 and UID precondition uid-gone", d)
	}
}
