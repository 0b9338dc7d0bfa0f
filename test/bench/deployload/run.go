package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

// config is one run's settings, from the flags.
type config struct {
	kubeconfig, kubectl    string
	namespace, name, image string
	replicas, nodes        int
	system                 string
	round, attempt         int
	setupTimeout, timeout  time.Duration
	procs                  bench.Procs
	procNames              []string
	busyMax                float64
	quietWait              time.Duration
	log                    io.Writer
}

// result is one run against one system: the JSON line deployload prints
// and -report reads.
type result struct {
	System   string `json:"system"`
	Round    int    `json:"round"`
	Attempt  int    `json:"attempt,omitempty"`
	Replicas int    `json:"replicas"`
	Nodes    int    `json:"nodes"`

	// The times from just before kubectl started until that many pods
	// existed, were bound to a node, and were Running.
	CreatedSeconds   float64 `json:"created_s"`
	ScheduledSeconds float64 `json:"scheduled_s"`
	RunningSeconds   float64 `json:"running_s"`
	KubectlSeconds   float64 `json:"kubectl_s"`  // kubectl create deployment's own run
	PodsPerSecond    float64 `json:"pods_per_s"` // replicas / running_s
	Running          int     `json:"running"`    // pods Running at the end (replicas unless it timed out)

	CPUSeconds      float64            `json:"cpu_s"` // the system's processes, from the create to all Running
	CPUByProcess    map[string]float64 `json:"cpu_s_by_process"`
	StartCPUSeconds float64            `json:"start_cpu_s"`  // the same before: starting, registering the nodes, idling
	PeakRSSMiB      float64            `json:"peak_rss_mib"` // the processes' highest resident memory (VmHWM), summed
	RSSMiB          float64            `json:"rss_mib"`      // their resident memory at the end
	BusyPct         float64            `json:"busy_pct"`     // machine CPU busy just before the create
	StealPct        float64            `json:"steal_pct"`    // machine CPU time stolen during the run
	IdlePct         float64            `json:"idle_pct"`     // machine CPU time no process used during the run
	Error           string             `json:"error,omitempty"`
}

func (c *config) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "%s %s: %s\n", time.Now().Format("15:04:05"), c.system, fmt.Sprintf(format, args...))
}

// perProcess reads each process's CPU time, in seconds.
func (c *config) perProcess() (map[string]float64, error) {
	out := map[string]float64{}
	for i, pid := range c.procs.PIDs {
		p := bench.Procs{FS: c.procs.FS, PIDs: []int{pid}, ClkTck: c.procs.ClkTck}
		d, err := p.CPU()
		if err != nil {
			return nil, err
		}
		out[c.procNames[i]] += d.Seconds()
	}
	return out, nil
}

func run(ctx context.Context, c *config) (*result, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.UserAgent = "deployload"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	if err := c.waitCluster(ctx, client); err != nil {
		return nil, err
	}

	t := newTracker(c.replicas)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(c.namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.set(obj) },
		UpdateFunc: func(_, obj any) { t.set(obj) },
		DeleteFunc: func(obj any) { t.remove(obj) },
	}); err != nil {
		return nil, err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	factory.Start(wctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("pod informer did not sync")
	}
	if n := t.counts().created; n > 0 {
		return nil, fmt.Errorf("%d pods already in namespace %s", n, c.namespace)
	}

	res := &result{System: c.system, Round: c.round, Attempt: c.attempt, Replicas: c.replicas, Nodes: c.nodes}
	startCPU, err := c.procs.CPU()
	if err != nil {
		return nil, err
	}
	if res.BusyPct, err = c.procs.WaitQuiet(c.busyMax, c.quietWait); err != nil {
		return nil, err
	}
	if res.BusyPct > c.busyMax {
		c.logf("warning: CPU %.0f%% busy before the run; its figures are noisy", res.BusyPct)
	}
	m0, err := c.procs.Machine()
	if err != nil {
		return nil, err
	}
	cpu0, _ := c.procs.CPU()
	by0, err := c.perProcess()
	if err != nil {
		return nil, err
	}
	res.StartCPUSeconds = startCPU.Seconds()

	c.logf("kubectl create deployment %s --replicas=%d", c.name, c.replicas)
	t0 := time.Now()
	t.start(t0)
	out, err := exec.CommandContext(ctx, c.kubectl, "--kubeconfig", c.kubeconfig, "-n", c.namespace,
		"create", "deployment", c.name, "--image", c.image, "--replicas", strconv.Itoa(c.replicas)).CombinedOutput()
	res.KubectlSeconds = time.Since(t0).Seconds()
	if err != nil {
		return nil, fmt.Errorf("kubectl create deployment: %v: %s", err, strings.TrimSpace(string(out)))
	}

	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	var runErr error
wait:
	for {
		select {
		case <-t.done:
			break wait
		case <-tick.C:
			n := t.counts()
			c.logf("%.0fs: %d pods, %d bound, %d Running", time.Since(t0).Seconds(), n.created, n.bound, n.running)
		case <-deadline.C:
			n := t.counts()
			runErr = fmt.Errorf("after %v: %d pods, %d bound, %d Running; want %d Running", c.timeout, n.created, n.bound, n.running, c.replicas)
			break wait
		case <-ctx.Done():
			runErr = ctx.Err()
			break wait
		}
	}
	cpu1, err := c.procs.CPU()
	if err != nil {
		return nil, err
	}
	m1, err := c.procs.Machine()
	if err != nil {
		return nil, err
	}
	by1, err := c.perProcess()
	if err != nil {
		return nil, err
	}
	rss, peak, err := c.procs.Memory()
	if err != nil {
		return nil, err
	}
	stopWatch()

	n := t.counts()
	res.CreatedSeconds = n.createdAt.Seconds()
	res.ScheduledSeconds = n.boundAt.Seconds()
	res.RunningSeconds = n.runningAt.Seconds()
	res.Running = n.running
	if res.RunningSeconds > 0 {
		res.PodsPerSecond = float64(c.replicas) / res.RunningSeconds
	}
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.CPUByProcess = map[string]float64{}
	for k, v := range by1 {
		res.CPUByProcess[k] = v - by0[k]
	}
	res.PeakRSSMiB = float64(peak) / (1 << 20)
	res.RSSMiB = float64(rss) / (1 << 20)
	res.StealPct, res.IdlePct = m1.Since(m0)
	if runErr == nil {
		c.logf("%d pods Running after %.1fs (%.0f pods/s); created by %.1fs, bound by %.1fs; %.1f CPU-s",
			c.replicas, res.RunningSeconds, res.PodsPerSecond, res.CreatedSeconds, res.ScheduledSeconds, res.CPUSeconds)
	}
	return res, runErr
}

// waitCluster waits for c.nodes Ready nodes without the not-ready taint,
// and for the namespace's default service account, which kube-apiserver's
// ServiceAccount admission needs before it admits a pod.
func (c *config) waitCluster(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, c.setupTimeout)
	defer cancel()
	start := time.Now()
	last := ""
	for {
		ready, status := 0, ""
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err == nil {
			for i := range nodes.Items {
				if schedulable(&nodes.Items[i]) {
					ready++
				}
			}
			status = fmt.Sprintf("%d of %d nodes Ready and schedulable", ready, len(nodes.Items))
		} else {
			status = "list nodes: " + err.Error()
		}
		if ready >= c.nodes {
			_, err = client.CoreV1().ServiceAccounts(c.namespace).Get(ctx, "default", metav1.GetOptions{})
			if err == nil {
				c.logf("%s, service account %s/default there, after %.0fs", status, c.namespace, time.Since(start).Seconds())
				return nil
			}
			if !apierrors.IsNotFound(err) {
				status += "; get service account: " + err.Error()
			} else {
				status += "; no service account " + c.namespace + "/default yet"
			}
		}
		if status != last {
			c.logf("waiting: %s", status)
			last = status
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready after %v: %s", c.setupTimeout, status)
		case <-time.After(time.Second):
		}
	}
}

// schedulable reports a node Ready, schedulable and without the not-ready
// or unreachable taints.
func schedulable(n *v1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == v1.TaintNodeNotReady || t.Key == v1.TaintNodeUnreachable {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.Status == v1.ConditionTrue
		}
	}
	return false
}

// tracker counts the namespace's pods as the watch shows them: how many
// exist, are bound to a node and are Running, and when each count first
// reached want.
type tracker struct {
	want int
	done chan struct{}

	mu      sync.Mutex
	t0      time.Time
	pods    map[types.UID]podState
	n       counts
	started bool
	closed  bool
}

type podState struct{ bound, running bool }

type counts struct {
	created, bound, running       int
	createdAt, boundAt, runningAt time.Duration // from start; 0 until reached
}

func newTracker(want int) *tracker {
	return &tracker{want: want, done: make(chan struct{}), pods: map[types.UID]podState{}}
}

// start sets the time the durations are counted from.
func (t *tracker) start(t0 time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.t0, t.started = t0, true
}

func (t *tracker) counts() counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

func (t *tracker) set(obj any) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	old, seen := t.pods[p.UID]
	st := podState{bound: p.Spec.NodeName != "", running: p.Status.Phase == v1.PodRunning}
	t.pods[p.UID] = st
	if !seen {
		t.n.created++
	}
	t.n.bound += b2i(st.bound) - b2i(old.bound)
	t.n.running += b2i(st.running) - b2i(old.running)
	t.reached(now)
}

func (t *tracker) remove(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old, seen := t.pods[p.UID]
	if !seen {
		return
	}
	delete(t.pods, p.UID)
	t.n.created--
	t.n.bound -= b2i(old.bound)
	t.n.running -= b2i(old.running)
}

// reached notes the first time each count reaches want; t.mu is held.
func (t *tracker) reached(now time.Time) {
	if !t.started {
		return
	}
	d := now.Sub(t.t0)
	for _, x := range []struct {
		n  int
		at *time.Duration
	}{{t.n.created, &t.n.createdAt}, {t.n.bound, &t.n.boundAt}, {t.n.running, &t.n.runningAt}} {
		if x.n >= t.want && *x.at == 0 {
			*x.at = d
		}
	}
	if t.n.runningAt > 0 && !t.closed {
		t.closed = true
		close(t.done)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
