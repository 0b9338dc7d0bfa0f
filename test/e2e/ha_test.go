package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testwait"
)

// The bounds of J.6. Leader election's lease is 15 s and its retry period
// 2 s, which client-go's elector stretches by a jitter of up to 1.2 times:
// a candidate sees the last renewal up to 4.4 s late, and the expiry as
// late again, so it takes over at most 15 + 2 × 4.4 s after the leader
// died (J.1). An API server's endpoint lease lives 15 s from its last
// renewal and the live servers watch the leases, so a dead server leaves
// the kubernetes Service's endpoints 15 s after it died, plus the time
// etcd takes to revoke the lease and a live server to write the change
// (J.3); a started one joins them within 15 s.
const (
	haTakeoverBound      = 15*time.Second + 2*4400*time.Millisecond
	haEndpointsJoinBound = 15 * time.Second
	haEndpointsGoneBound = 17 * time.Second
	haStallBound         = 2 * time.Second
	haFollowerStop       = 10 * time.Second
	haWriters            = 16
	haWatchers           = 4
	haWriteEvery         = 150 * time.Millisecond // per writer
	haReplicas           = 20
	haMaxPods            = haReplicas + haReplicas/4 // the Deployment's default 25% surge
	haNamespace          = "ha"
)

// TestHATopologyUnderFaults_J6 starts examples/ha (three etcd members, two
// API servers, two gateways with both API servers as upstreams, two
// leader-elected controller managers and schedulers, simulated nodes),
// puts it under 16 writers and 4 watchers, and injects one fault after
// another, each once the system has settled from the last: etcd's leader
// killed, an API server killed, a gateway killed, the leading controller
// manager and scheduler killed, an etcd follower stopped for 10 s. No
// acknowledged write may be lost or unseen by a watcher; the figures each
// fault costs are logged.
func TestHATopologyUnderFaults_J6(t *testing.T) {
	for _, tool := range []string{"bash", "kubectl", "curl", "setsid", "ip"} {
		requireTool(t, tool)
	}
	if os.Geteuid() != 0 && os.Getenv("HA_ADDRESSES") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("examples/ha adds two addresses to lo, which needs root; or set HA_ADDRESSES to two addresses of this machine")
		}
		t.Skip("examples/ha adds two addresses to lo, which needs root; or set HA_ADDRESSES to two addresses of this machine")
	}
	h := startHA(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	if _, err := h.cs[0].CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: haNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", haNamespace, err)
	}
	h.checkEndpoints(t, "at start", h.addresses, haEndpointsJoinBound)
	h.elected = true
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		holder, err := h.holder(ctx, lease)
		if err != nil || holder == "" {
			t.Errorf("Lease kube-system/%s: holder %q %v; the controller managers and schedulers run without leader election", lease, holder, err)
			h.elected = false
		}
	}

	// The Deployment is there and complete before any fault.
	h.createDeployment(t, ctx)
	pods := h.pollPods(ctx)

	list, err := h.cs[0].CoreV1().ConfigMaps(haNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps: %v", err)
	}
	l := newHALoad(ctx, h)
	for i := range haWatchers {
		l.startWatcher(ctx, i, list.ResourceVersion)
	}
	for i := range haWriters {
		l.startWriter(i)
	}
	h.settle(t, l, "before the faults")

	h.faultEtcdLeader(t, l)
	h.faultAPIServer(t, l)
	h.faultGateway(t, l)
	h.faultLeader(t, l, "kube-controller-manager", "controllers")
	h.faultLeader(t, l, "kube-scheduler", "scheduler")
	h.faultEtcdFollowerStopped(t, l)

	l.stopWriters()
	l.check(t, ctx)
	maxPods, polls, pollErrs := pods()
	t.Logf("Deployment of %d: at most %d pods at any of %d polls (%d polls failed)", haReplicas, maxPods, polls, pollErrs)
	if maxPods > haMaxPods {
		t.Errorf("the Deployment of %d had %d pods at one poll, more than %d (its 25%% surge)", haReplicas, maxPods, haMaxPods)
	}
}

// haTopology is a running examples/ha and clients of its two gateways.
type haTopology struct {
	dir, script string
	env         map[string]string
	addresses   []string // the API servers', also the gateways'
	gateways    []string
	etcd        []string // client URLs, etcd-1 first
	cs          []*kubernetes.Clientset
	etcdTLS     transport.TLSInfo
	elected     bool // the controller managers and schedulers hold Leases
}

func startHA(t *testing.T) *haTopology {
	t.Helper()
	h := &haTopology{dir: t.TempDir(), script: filepath.Join(repoRoot(t), "examples", "ha", "run.sh")}
	t.Cleanup(func() {
		if t.Failed() {
			h.logTails(t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "bash", h.script, "stop", h.dir).CombinedOutput(); err != nil {
			t.Errorf("examples/ha/run.sh stop: %v\n%s", err, out)
		}
	})
	// The first run on a machine builds etcd; a loaded 2-core machine
	// takes a few minutes for it all.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", h.script, h.dir)
	cmd.Env = append(kubectlEnv(t), "KUBEGATE="+kubegateBin)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("examples/ha/run.sh: %v\n%s", err, out.String())
	}
	t.Logf("examples/ha/run.sh was ready after %v:\n%s", time.Since(start).Round(time.Second), out.String())

	h.env = readEnvFile(t, filepath.Join(h.dir, "topology.env"))
	h.addresses = strings.Fields(h.env["ADDRESSES"])
	h.gateways = strings.Split(h.env["GATEWAYS"], ",")
	h.etcd = strings.Split(h.env["ETCD_ENDPOINTS"], ",")
	if len(h.addresses) != 2 || len(h.gateways) != 2 || len(h.etcd) != 3 {
		t.Fatalf("topology.env: got %d addresses, %d gateways, %d etcd members, want 2, 2, 3: %v", len(h.addresses), len(h.gateways), len(h.etcd), h.env)
	}
	for _, gw := range h.gateways {
		cfg, err := clientcmd.BuildConfigFromFlags(gw, filepath.Join(h.dir, "admin.conf"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = -1, 0
		cfg.Timeout = 10 * time.Second
		cfg.WarningHandler = rest.NoWarnings{} // the kubernetes Endpoints are read on purpose
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h.cs = append(h.cs, cs)
	}
	pki := func(name string) string { return filepath.Join(h.dir, "pki", name) }
	h.etcdTLS = transport.TLSInfo{CertFile: pki("etcd/healthcheck-client.crt"), KeyFile: pki("etcd/healthcheck-client.key"), TrustedCAFile: pki("etcd/ca.crt")}
	return h
}

// readEnvFile reads NAME=VALUE lines, the value optionally in single quotes.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			env[k] = strings.Trim(v, "'")
		}
	}
	return env
}

func (h *haTopology) logTails(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(h.dir, "logs", "*.log"))
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		t.Logf("the end of %s:\n%s", filepath.Base(p), strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}

// pid is the process id of component name, as the script recorded it.
func (h *haTopology) pid(t *testing.T, name string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.dir, "run", name+".pid"))
	if err != nil {
		t.Fatalf("pid of %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid of %s: %v", name, err)
	}
	return pid
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// signal sends sig to component name; with SIGKILL it waits until the
// process is gone.
func (h *haTopology) signal(t *testing.T, name string, sig syscall.Signal) time.Time {
	t.Helper()
	pid := h.pid(t, name)
	if !alive(pid) {
		t.Fatalf("%s (pid %d) does not run", name, pid)
	}
	at := time.Now()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill -%d %s (pid %d): %v", sig, name, pid, err)
	}
	if sig == syscall.SIGKILL {
		testwait.For(t, 10*time.Second, name+" gone after kill -9", func() (bool, string) { return !alive(pid), "running" })
	}
	return at
}

// restart starts component name again through the script, which waits
// until it is ready.
func (h *haTopology) restart(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", h.script, "restart", h.dir, name)
	cmd.Env = kubectlEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("examples/ha/run.sh restart %s: %v\n%s", name, err, out)
	}
}

// etcdLeader is the index in h.etcd of the member that leads, asked of
// every member that answers.
func (h *haTopology) etcdLeader(ctx context.Context) (int, error) {
	tlsCfg, err := h.etcdTLS.ClientConfig()
	if err != nil {
		return -1, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: h.etcd, TLS: tlsCfg, DialTimeout: 3 * time.Second})
	if err != nil {
		return -1, err
	}
	defer cli.Close()
	var errs []error
	for _, ep := range h.etcd {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Leader == 0 {
			errs = append(errs, fmt.Errorf("%s knows no leader", ep))
			continue
		}
		if st.Header.MemberId == st.Leader {
			return slices.Index(h.etcd, ep), nil
		}
	}
	return -1, fmt.Errorf("no member says it leads: %v", errors.Join(errs...))
}

// etcdHealthy reports whether every member answers Status and all agree on
// one leader.
func (h *haTopology) etcdHealthy(ctx context.Context) (bool, string) {
	tlsCfg, err := h.etcdTLS.ClientConfig()
	if err != nil {
		return false, err.Error()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: h.etcd, TLS: tlsCfg, DialTimeout: 3 * time.Second})
	if err != nil {
		return false, err.Error()
	}
	defer cli.Close()
	leaders := map[uint64]bool{}
	for _, ep := range h.etcd {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil {
			return false, fmt.Sprintf("%s: %v", ep, err)
		}
		leaders[st.Leader] = true
	}
	if len(leaders) != 1 || leaders[0] {
		return false, fmt.Sprintf("members disagree on the leader: %v", leaders)
	}
	return true, ""
}

// endpoints are the addresses the kubernetes Service's Endpoints and
// EndpointSlice list, read through either gateway.
func (h *haTopology) endpoints(ctx context.Context) ([]string, error) {
	var last error
	for _, cs := range h.cs {
		ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			last = err
			continue
		}
		var ips []string
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				ips = append(ips, a.IP)
			}
		}
		slice, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			last = fmt.Errorf("EndpointSlice default/kubernetes: %w", err)
			continue
		}
		var sips []string
		for _, e := range slice.Endpoints {
			sips = append(sips, e.Addresses...)
		}
		sort.Strings(ips)
		sort.Strings(sips)
		if !slices.Equal(ips, sips) {
			return nil, fmt.Errorf("Endpoints list %v, EndpointSlice %v", ips, sips)
		}
		return ips, nil
	}
	return nil, last
}

// checkEndpoints waits up to bound for the kubernetes Service to list
// exactly want, and logs how long it took.
func (h *haTopology) checkEndpoints(t *testing.T, when string, want []string, bound time.Duration) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	start := time.Now()
	var seen string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := h.endpoints(ctx)
		cancel()
		if err == nil && slices.Equal(got, want) {
			t.Logf("the kubernetes Service listed %v %v after %v", want, when, time.Since(start).Round(100*time.Millisecond))
			return
		}
		seen = fmt.Sprint(got, " ", err)
		if time.Since(start) > bound {
			t.Errorf("the kubernetes Service's endpoints %s: want %v within %v, still %s", when, want, bound, seen)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (h *haTopology) createDeployment(t *testing.T, ctx context.Context) {
	t.Helper()
	replicas := int32(haReplicas)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	if _, err := h.cs[0].AppsV1().Deployments(haNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Deployment: %v", err)
	}
	start := time.Now()
	testwait.For(t, 3*time.Minute, "the Deployment's 20 pods available", func() (bool, string) {
		got, err := h.cs[0].AppsV1().Deployments(haNamespace).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.AvailableReplicas == haReplicas, fmt.Sprintf("%d available", got.Status.AvailableReplicas)
	})
	t.Logf("the Deployment of %d was available after %v", haReplicas, time.Since(start).Round(100*time.Millisecond))
}

// pollPods counts the Deployment's live pods every second through the
// gateways in turn until ctx ends; the function it returns gives the
// largest count seen, the polls made and those that failed.
func (h *haTopology) pollPods(ctx context.Context) func() (maxPods, polls, failed int) {
	var mu sync.Mutex
	var most, n, bad int
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			list, err := h.cs[i%2].CoreV1().Pods(haNamespace).List(pctx, metav1.ListOptions{LabelSelector: "app=web"})
			cancel()
			mu.Lock()
			n++
			if err != nil {
				bad++
			} else {
				live := 0
				for _, p := range list.Items {
					if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
						live++
					}
				}
				most = max(most, live)
			}
			mu.Unlock()
		}
	}()
	return func() (int, int, int) {
		mu.Lock()
		defer mu.Unlock()
		return most, n, bad
	}
}

// settle waits until every component runs and answers, etcd has one
// leader, the leases are held and writes are acknowledged again.
func (h *haTopology) settle(t *testing.T, l *haLoad, after string) {
	t.Helper()
	start := time.Now()
	acks := l.ackCount()
	testwait.For(t, 2*time.Minute, "the topology settled "+after, func() (bool, string) {
		names, _ := filepath.Glob(filepath.Join(h.dir, "run", "*.pid"))
		if len(names) < 12 {
			return false, fmt.Sprintf("%d components recorded", len(names))
		}
		for _, p := range names {
			data, _ := os.ReadFile(p)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			if !alive(pid) {
				return false, filepath.Base(p) + " not running"
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if ok, seen := h.etcdHealthy(ctx); !ok {
			return false, seen
		}
		for i, cs := range h.cs {
			body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			if err != nil || string(body) != "ok" {
				return false, fmt.Sprintf("gateway %d /readyz: %s %v", i+1, body, err)
			}
		}
		for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
			if !h.elected {
				break
			}
			if holder, err := h.holder(ctx, lease); err != nil || holder == "" {
				return false, fmt.Sprintf("Lease %s: holder %q %v", lease, holder, err)
			}
		}
		if n := l.ackCount(); n < acks+2*haWriters {
			return false, fmt.Sprintf("%d writes acknowledged since", n-acks)
		}
		return true, ""
	})
	t.Logf("settled %s in %v", after, time.Since(start).Round(100*time.Millisecond))
}

func (h *haTopology) holder(ctx context.Context, lease string) (string, error) {
	var last error
	for _, cs := range h.cs {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			last = err
			continue
		}
		if l.Spec.HolderIdentity == nil {
			return "", nil
		}
		return *l.Spec.HolderIdentity, nil
	}
	return "", last
}

func (h *haTopology) faultEtcdLeader(t *testing.T, l *haLoad) {
	t.Helper()
	leader, err := h.etcdLeader(context.Background())
	if err != nil {
		t.Fatalf("etcd leader: %v", err)
	}
	name := fmt.Sprintf("etcd-%d", leader+1)
	w := l.window()
	killed := h.signal(t, name, syscall.SIGKILL)
	var newLeader int
	testwait.For(t, 30*time.Second, "a new etcd leader", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		newLeader, err = h.etcdLeader(ctx)
		return err == nil && newLeader != leader, fmt.Sprint(newLeader, err)
	})
	elected := time.Since(killed)
	h.restart(t, name)
	h.settle(t, l, "after etcd's leader was killed")
	f := w.end()
	t.Logf("kill -9 of the etcd leader %s: etcd-%d leads after %v; %s", name, newLeader+1, elected.Round(10*time.Millisecond), f)
}

func (h *haTopology) faultAPIServer(t *testing.T, l *haLoad) {
	t.Helper()
	w := l.window()
	h.signal(t, "apiserver-1", syscall.SIGKILL)
	h.checkEndpoints(t, "once apiserver-1 was killed", h.addresses[1:], haEndpointsGoneBound)
	f := w.end()
	h.restart(t, "apiserver-1")
	h.checkEndpoints(t, "once apiserver-1 was ready again", h.addresses, haEndpointsJoinBound)
	h.settle(t, l, "after an API server was killed")
	t.Logf("kill -9 of apiserver-1, until its endpoint left: %s", f)
	// Each writer has one request in flight; only one sent to the killed
	// server may fail (a write the gateway cannot tell was applied, J.5):
	// the next goes to the other server. A share of all requests would
	// depend on how long the endpoint took to leave.
	if f.attempts == 0 || f.failures > haWriters {
		t.Errorf("with one API server killed, %d of %d requests failed; want at most %d, one per writer (both gateways have both upstreams)", f.failures, f.attempts, haWriters)
	}
}

func (h *haTopology) faultGateway(t *testing.T, l *haLoad) {
	t.Helper()
	w := l.window()
	h.signal(t, "gateway-1", syscall.SIGKILL)
	// A kubeconfig names one server: a client of gateway 1 that wants to
	// go on retries on gateway 2 itself, as the writers and watchers do.
	testwait.For(t, 30*time.Second, "writes acknowledged through gateway 2 alone", func() (bool, string) {
		n := l.ackCountSince(w.start)
		return n >= 4*haWriters, fmt.Sprintf("%d acknowledged", n)
	})
	h.restart(t, "gateway-1")
	h.settle(t, l, "after a gateway was killed")
	f := w.end()
	t.Logf("kill -9 of gateway-1 until it was back: %s (the failures are the first attempts on gateway 1, each retried on gateway 2)", f)
	if f.unacked > 0 {
		t.Errorf("%d writes were never acknowledged with gateway 2 up", f.unacked)
	}
}

// faultLeader kills the holder of lease (a process named prefix-N, whose
// log names its identity) and times the other's takeover.
func (h *haTopology) faultLeader(t *testing.T, l *haLoad, lease, prefix string) {
	t.Helper()
	ctx := context.Background()
	holder, err := h.holder(ctx, lease)
	if err != nil || holder == "" {
		t.Errorf("Lease kube-system/%s: holder %q %v; the %s processes run without leader election: no takeover to time", lease, holder, err, prefix)
		return
	}
	// The standby's log names the holder too ("leader elected"): the
	// holder is the process whose log says it became leader as holder.
	name := ""
	for _, n := range []string{prefix + "-1", prefix + "-2"} {
		data, _ := os.ReadFile(filepath.Join(h.dir, "logs", n+".log"))
		for line := range bytes.Lines(data) {
			if bytes.Contains(line, []byte("became leader")) && bytes.Contains(line, []byte(holder)) {
				name = n
			}
		}
	}
	if name == "" {
		t.Errorf("Lease kube-system/%s is held by %q, which neither %s-1's nor %s-2's log names", lease, holder, prefix, prefix)
		return
	}
	w := l.window()
	killed := h.signal(t, name, syscall.SIGKILL)
	var now string
	testwait.For(t, 2*haTakeoverBound, "a new holder of Lease "+lease, func() (bool, string) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		now, err = h.holder(cctx, lease)
		return err == nil && now != "" && now != holder, fmt.Sprintf("holder %q %v", now, err)
	})
	took := time.Since(killed)
	h.restart(t, name)
	h.settle(t, l, "after the leading "+prefix+" was killed")
	f := w.end()
	t.Logf("kill -9 of the leading %s (%s): %q took Lease %s over after %v; %s", prefix, name, now, lease, took.Round(10*time.Millisecond), f)
	if took > haTakeoverBound {
		t.Errorf("the other %s took over after %v, want at most %v (lease duration + twice the jittered retry period)", prefix, took, haTakeoverBound)
	}
}

func (h *haTopology) faultEtcdFollowerStopped(t *testing.T, l *haLoad) {
	t.Helper()
	leader, err := h.etcdLeader(context.Background())
	if err != nil {
		t.Fatalf("etcd leader: %v", err)
	}
	name := fmt.Sprintf("etcd-%d", (leader+1)%3+1)
	w := l.window()
	stopped := h.signal(t, name, syscall.SIGSTOP)
	// The follower stays stopped for a while whatever the test observes:
	// this is the fault's length, not a wait for a state.
	time.Sleep(haFollowerStop)
	resumed := h.signal(t, name, syscall.SIGCONT)
	h.settle(t, l, "after an etcd follower was stopped")
	f := w.end()
	gap := l.longestGap(stopped, resumed)
	t.Logf("SIGSTOP of the etcd follower %s for %v: longest gap between acknowledged writes %v; %s", name, haFollowerStop, gap.Round(time.Millisecond), f)
	if gap >= haStallBound {
		t.Errorf("with an etcd follower stopped, writes stopped for %v, want less than %v", gap, haStallBound)
	}
}

// haLoad is the writers and watchers and what they recorded.
type haLoad struct {
	h      *haTopology
	ctx    context.Context // the writers'
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	acked    map[string]string // name → value of every acknowledged create
	ackTimes []time.Time
	attempts []haAttempt
	unacked  int
	foreign  []string // names that held another value than the one written

	watchers []*haWatcher
}

type haAttempt struct {
	at time.Time
	ok bool
}

type haWatcher struct {
	mu       sync.Mutex
	seen     map[string]string
	rewatch  int // watches started again after an error or an end
	relisted int // lists after a 410
}

func newHALoad(ctx context.Context, h *haTopology) *haLoad {
	l := &haLoad{h: h, acked: map[string]string{}}
	l.ctx, l.cancel = context.WithCancel(ctx)
	return l
}

func (l *haLoad) startWriter(w int) {
	ctx := l.ctx
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(haWriteEvery)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			l.create(ctx, (w+seq)%2, fmt.Sprintf("w%02d-%06d", w, seq))
		}
	}()
}

// create makes one ConfigMap with a random value through gateway gw,
// retrying on the other gateway after a failure until it is acknowledged
// or 2 minutes pass. A retry answered AlreadyExists reads the object: if it
// holds the value written, the earlier attempt was carried out.
func (l *haLoad) create(ctx context.Context, gw int, name string) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	value := hex.EncodeToString(b)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": value}}
	deadline := time.Now().Add(2 * time.Minute)
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		_, err := l.h.cs[gw].CoreV1().ConfigMaps(haNamespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			got, gerr := l.h.cs[gw].CoreV1().ConfigMaps(haNamespace).Get(ctx, name, metav1.GetOptions{})
			switch {
			case gerr != nil:
				err = gerr
			case got.Data["v"] == value:
				err = nil
			default:
				l.mu.Lock()
				l.foreign = append(l.foreign, name)
				l.mu.Unlock()
				return
			}
		}
		l.mu.Lock()
		now := time.Now() // under the lock, so that ackTimes stays sorted
		l.attempts = append(l.attempts, haAttempt{at: now, ok: err == nil})
		if err == nil {
			l.acked[name] = value
			l.ackTimes = append(l.ackTimes, now)
		}
		l.mu.Unlock()
		if err == nil || ctx.Err() != nil {
			return
		}
		if now.After(deadline) {
			l.mu.Lock()
			l.unacked++
			l.mu.Unlock()
			return
		}
		gw = 1 - gw
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}

func (l *haLoad) stopWriters() {
	l.cancel()
	l.wg.Wait()
}

func (l *haLoad) ackCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ackTimes)
}

func (l *haLoad) ackCountSince(at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, _ := slices.BinarySearchFunc(l.ackTimes, at, func(a, b time.Time) int { return a.Compare(b) })
	return len(l.ackTimes) - i
}

// longestGap is the longest time between acknowledged writes (or a window
// edge) within [from, to].
func (l *haLoad) longestGap(from, to time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	times := slices.Clone(l.ackTimes)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	last, gap := from, time.Duration(0)
	for _, at := range times {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			break
		}
		gap = max(gap, at.Sub(last))
		last = at
	}
	return max(gap, to.Sub(last))
}

// haWindow counts what the writers did from its start to its end.
type haWindow struct {
	l     *haLoad
	start time.Time
	un    int
}

type haFigures struct {
	attempts, failures, acks, unacked int
	span                              time.Duration
}

func (f haFigures) String() string {
	return fmt.Sprintf("%d requests, %d failed (%.2f%%), %d writes acknowledged, %d never, over %v",
		f.attempts, f.failures, 100*float64(f.failures)/float64(max(f.attempts, 1)), f.acks, f.unacked, f.span.Round(100*time.Millisecond))
}

func (l *haLoad) window() *haWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &haWindow{l: l, start: time.Now(), un: l.unacked}
}

func (w *haWindow) end() haFigures {
	l := w.l
	l.mu.Lock()
	defer l.mu.Unlock()
	f := haFigures{unacked: l.unacked - w.un, span: time.Since(w.start)}
	for _, a := range l.attempts {
		if a.at.Before(w.start) {
			continue
		}
		f.attempts++
		if a.ok {
			f.acks++
		} else {
			f.failures++
		}
	}
	return f
}

// startWatcher watches the namespace's ConfigMaps from rv through gateway
// i%2, and after an error or the end of a watch from the last
// resourceVersion seen through the other gateway, as a reflector would;
// after a 410 it lists.
func (l *haLoad) startWatcher(ctx context.Context, i int, rv string) {
	w := &haWatcher{seen: map[string]string{}}
	l.watchers = append(l.watchers, w)
	go func() {
		gw := i % 2
		for ctx.Err() == nil {
			next, err := w.watchOnce(ctx, l.h.cs[gw], rv)
			if next != "" {
				rv = next
			}
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				list, lerr := l.h.cs[gw].CoreV1().ConfigMaps(haNamespace).List(ctx, metav1.ListOptions{})
				if lerr == nil {
					w.mu.Lock()
					w.relisted++
					for _, cm := range list.Items {
						w.seen[cm.Name] = cm.Data["v"]
					}
					w.mu.Unlock()
					rv = list.ResourceVersion
				}
			}
			w.mu.Lock()
			w.rewatch++
			w.mu.Unlock()
			gw = 1 - gw
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// watchOnce records every ConfigMap added until the watch ends, and
// returns the last resourceVersion seen.
func (w *haWatcher) watchOnce(ctx context.Context, cs *kubernetes.Clientset, rv string) (string, error) {
	wi, err := cs.CoreV1().ConfigMaps(haNamespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: ptrInt64(300)})
	if err != nil {
		return "", err
	}
	defer wi.Stop()
	last := ""
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return last, apierrors.FromObject(ev.Object)
		case watch.Added, watch.Modified, watch.Bookmark:
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			last = cm.ResourceVersion
			if ev.Type == watch.Added {
				w.mu.Lock()
				w.seen[cm.Name] = cm.Data["v"]
				w.mu.Unlock()
			}
		}
	}
	return last, nil
}

func ptrInt64(v int64) *int64 { return &v }

// check reads every acknowledged write back and waits for every watcher to
// have seen each.
func (l *haLoad) check(t *testing.T, ctx context.Context) {
	t.Helper()
	l.mu.Lock()
	acked := maps.Clone(l.acked)
	attempts, unacked, foreign := len(l.attempts), l.unacked, slices.Clone(l.foreign)
	failures := 0
	for _, a := range l.attempts {
		if !a.ok {
			failures++
		}
	}
	l.mu.Unlock()
	t.Logf("writers: %d writes acknowledged, %d requests of which %d failed, %d writes never acknowledged", len(acked), attempts, failures, unacked)
	if len(foreign) > 0 {
		t.Errorf("%d names held another value than the one written, such as %s", len(foreign), foreign[0])
	}

	stored := map[string]string{}
	testwait.For(t, time.Minute, "a full list of the ConfigMaps", func() (bool, string) {
		clear(stored)
		opts := metav1.ListOptions{Limit: 500}
		for {
			lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			list, err := l.h.cs[0].CoreV1().ConfigMaps(haNamespace).List(lctx, opts)
			cancel()
			if err != nil {
				return false, err.Error()
			}
			for _, cm := range list.Items {
				stored[cm.Name] = cm.Data["v"]
			}
			if list.Continue == "" {
				return true, ""
			}
			opts.Continue = list.Continue
		}
	})
	lost, changed := 0, 0
	for name, v := range acked {
		got, ok := stored[name]
		switch {
		case !ok:
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged write %s is not stored", name)
			}
		case got != v:
			changed++
			if changed <= 5 {
				t.Errorf("acknowledged write %s holds %q, want %q", name, got, v)
			}
		}
	}
	t.Logf("acknowledged writes lost: %d, changed: %d, of %d", lost, changed, len(acked))

	for i, w := range l.watchers {
		var missing int
		var example string
		deadline := time.Now().Add(time.Minute)
		for {
			missing, example = 0, ""
			w.mu.Lock()
			for name, v := range acked {
				if w.seen[name] != v {
					missing++
					example = name
				}
			}
			rewatch, relisted := w.rewatch, w.relisted
			w.mu.Unlock()
			if missing == 0 || time.Now().After(deadline) {
				t.Logf("watcher %d: saw %d of %d acknowledged creates; watched again %d times, listed again %d times", i, len(acked)-missing, len(acked), rewatch, relisted)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if missing > 0 {
			t.Errorf("watcher %d missed %d acknowledged creates, such as %s", i, missing, example)
		}
	}
}
