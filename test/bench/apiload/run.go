package main

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

const (
	protobuf = "application/vnd.kubernetes.protobuf"
	jsonType = "application/json"
	// watchLabel marks the pods of the watch phase; the watchers select it.
	watchLabel = "bench-phase"
)

// config is one run, as parsed from the flags.
type config struct {
	kubeconfig    string // the clients' credentials (admin.conf)
	bootstrap     string // with it, bind kubeadm:cluster-admins first, as kubeadm init does
	namespace     string // where the pods go; created with its default service account
	system        string // recorded in the result
	kind          string // kindPods or kindCR: what is created and listed
	round         int    // recorded in the result
	attempt       int    // recorded in the result
	clients       []int  // one time-boxed create phase per value
	createFor     time.Duration
	createMax     int64 // most pods one create phase makes
	pods          int64 // pods in the namespace, created before the lists
	fillClients   int
	lists         int // timed LISTs per content type
	listGzip      bool
	watchers      int
	watchEvents   int
	watchInterval time.Duration
	watchTimeout  time.Duration
	readyTimeout  time.Duration
	shareConn     bool // every client on one connection, as one client-go process's goroutines
	procs         bench.Procs
	busyMax       float64
	quietWait     time.Duration
	log           io.Writer
}

// createNamespace is the namespace of the timed create phases.
func (c *config) createNamespace() string { return c.namespace + "-create" }

// runner carries a run's clients and its failures.
type runner struct {
	cfg  *config
	rest *rest.Config

	mu    sync.Mutex
	kinds map[string]int64
}

// fail counts one failed request under the kind of err.
func (r *runner) fail(err error) {
	kind := "transport"
	var st apierrors.APIStatus
	switch {
	case errors.As(err, &st):
		kind = fmt.Sprintf("%d %s", st.Status().Code, st.Status().Reason)
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	}
	r.mu.Lock()
	r.kinds[kind]++
	first := r.kinds[kind] == 1
	r.mu.Unlock()
	if first {
		r.logf("%s: first failure of kind %q: %v", r.cfg.system, kind, err)
	}
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.log, "apiload: "+format+"\n", args...)
}

// restConfig loads a kubeconfig for protobuf clients without client-side
// rate limiting: the server is what is measured.
func restConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", path, err)
	}
	cfg.ContentType = protobuf
	cfg.AcceptContentTypes = protobuf + "," + jsonType
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = 60 * time.Second
	cfg.UserAgent = "apiload"
	return cfg, nil
}

// ownConn returns the run's client config. Unless the run shares one
// connection, a client made from it gets its own: a Dial function makes
// client-go build a new transport instead of reusing its cached one.
func (r *runner) ownConn() *rest.Config {
	cfg := rest.CopyConfig(r.rest)
	if !r.cfg.shareConn {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		cfg.Dial = d.DialContext
	}
	return cfg
}

// client returns a clientset on its own connection (see ownConn).
func (r *runner) client() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(r.ownConn())
}

// creator is one client of a create phase: create makes one object of the
// run's kind, warm opens its connection.
type creator struct {
	create func(ctx context.Context, namespace, name string, labels map[string]string) error
	warm   func(ctx context.Context) error
}

// podCreator is a creator of pods on a protobuf clientset of its own.
func (r *runner) podCreator() (creator, error) {
	c, err := r.client()
	if err != nil {
		return creator{}, err
	}
	return creator{
		create: func(ctx context.Context, namespace, name string, labels map[string]string) error {
			_, err := c.CoreV1().Pods(namespace).Create(ctx, pod(name, labels), metav1.CreateOptions{})
			return err
		},
		warm: func(ctx context.Context) error {
			_, err := c.CoreV1().Namespaces().Get(ctx, r.cfg.namespace, metav1.GetOptions{})
			return err
		},
	}, nil
}

// creators returns n creators of the run's kind.
func (r *runner) creators(n int) ([]creator, error) {
	make1 := r.podCreator
	if r.cfg.kind == kindCR {
		make1 = r.crCreator
	}
	cs := make([]creator, n)
	for i := range cs {
		var err error
		if cs[i], err = make1(); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// noun names the objects of the run's kind, in the plural.
func (c *config) noun() string {
	if c.kind == kindCR {
		return "custom resources"
	}
	return "pods"
}

// run runs every phase and returns the result; an error means the run
// could not be completed, while failed requests only count in the result.
func run(ctx context.Context, cfg *config) (*result, error) {
	rc, err := restConfig(cfg.kubeconfig)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, rest: rc, kinds: map[string]int64{}}
	if cfg.bootstrap != "" {
		if err := r.bindAdmins(ctx); err != nil {
			return nil, err
		}
	}
	admin, err := r.client()
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, admin, cfg.readyTimeout); err != nil {
		return nil, err
	}
	if err := r.setup(ctx, admin); err != nil {
		return nil, err
	}
	if cfg.kind == kindCR {
		if err := r.applyCRD(ctx); err != nil {
			return nil, err
		}
	}
	res := &result{System: cfg.system, Round: cfg.round, Attempt: cfg.attempt}
	if cfg.kind == kindCR {
		res.Kind = kindCR
	}
	startCPU, err := cfg.procs.CPU()
	if err != nil {
		return nil, err
	}
	res.StartCPUSeconds = startCPU.Seconds()
	if res.BusyPct, err = r.waitQuiet(); err != nil {
		return nil, err
	}

	m0, err := cfg.procs.Machine()
	if err != nil {
		return nil, err
	}
	cpu0, _ := cfg.procs.CPU()
	t0 := time.Now()

	most := cfg.fillClients
	for _, c := range cfg.clients {
		most = max(most, c)
	}
	cs, err := r.creators(most)
	if err != nil {
		return nil, err
	}
	// Open every connection (TLS handshake, HTTP/2 settings) before any
	// phase is timed.
	for _, c := range cs {
		if err := c.warm(ctx); err != nil {
			return nil, fmt.Errorf("warm a connection: %w", err)
		}
	}

	// The namespace first holds cfg.pods pods: their LISTs and the
	// servers' memory with them are measured on the same work for every
	// system.
	res.Fill = r.createPods(ctx, cs[:cfg.fillClients], cfg.namespace, "fill", 0, cfg.pods)
	res.Pods = int(res.Fill.Pods)
	r.logf("%s: filled %s with %d %s at %.0f/s, %.0fµs server CPU per create", cfg.system, cfg.namespace, res.Pods, cfg.noun(), res.Fill.PerSecond, res.Fill.CPUusPerOp)
	// The LISTs time the server at rest: whatever the creates left
	// running (here or elsewhere on the machine) is let finish first.
	if _, err := r.waitQuiet(); err != nil {
		return nil, err
	}
	if err := r.lists(ctx, res); err != nil {
		return nil, err
	}
	rss, _, err := cfg.procs.Memory()
	if err != nil {
		return nil, err
	}
	res.RSSMiB = float64(rss) / (1 << 20)
	r.logf("%s: LIST of %d %s: JSON %.0fms, protobuf %.0fms; RSS %.0f MiB", cfg.system, res.Pods, cfg.noun(), res.ListJSONMedian, res.ListProtoMedian, res.RSSMiB)

	// Then the timed creates, in a namespace of their own so that the
	// list above and the watch below see only their own pods.
	for i, n := range cfg.clients {
		p := r.createPods(ctx, cs[:n], cfg.createNamespace(), fmt.Sprintf("c%d-%d", n, i), cfg.createFor, cfg.createMax)
		res.Creates = append(res.Creates, p)
		r.logf("%s: %d clients: %d %s in %.1fs, %.0f/s, %.0fµs server CPU per create, %d errors",
			cfg.system, n, p.Pods, cfg.noun(), p.Seconds, p.PerSecond, p.CPUusPerOp, p.Errors)
	}

	if cfg.watchers > 0 && cfg.watchEvents > 0 {
		if res.Watch, err = r.watchFanOut(ctx, admin); err != nil {
			return nil, err
		}
		r.logf("%s: %d watchers, %d pods: delay p50 %.1fms, p99 %.1fms, %d missed",
			cfg.system, res.Watch.Watchers, res.Watch.Events, res.Watch.P50ms, res.Watch.P99ms, res.Watch.Missed)
	}

	res.Seconds = time.Since(t0).Seconds()
	cpu1, err := cfg.procs.CPU()
	if err != nil {
		return nil, err
	}
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	m1, err := cfg.procs.Machine()
	if err != nil {
		return nil, err
	}
	res.StealPct, res.IdlePct = m1.Since(m0)
	_, peak, err := cfg.procs.Memory()
	if err != nil {
		return nil, err
	}
	res.PeakRSSMiB = float64(peak) / (1 << 20)
	for k, n := range r.kinds {
		res.Errors += n
		if res.ErrorKinds == nil {
			res.ErrorKinds = map[string]int64{}
		}
		res.ErrorKinds[k] = n
	}
	return res, nil
}

// bindAdmins binds the group of admin.conf, kubeadm:cluster-admins, to
// cluster-admin with the bootstrap (super-admin) credentials, as kubeadm
// init does; kube-apiserver does not, kubegate does it itself.
func (r *runner) bindAdmins(ctx context.Context) error {
	rc, err := restConfig(r.cfg.bootstrap)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, cs, r.cfg.readyTimeout); err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:cluster-admins"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "kubeadm:cluster-admins"}},
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind kubeadm:cluster-admins: %w", err)
	}
	return nil
}

// waitReady waits until /readyz answers ok.
func waitReady(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(c)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// setup creates the namespaces and their default service accounts, which
// kube-apiserver's ServiceAccount admission requires of every pod and
// which, without kube-controller-manager, nothing else creates.
func (r *runner) setup(ctx context.Context, cs kubernetes.Interface) error {
	for _, name := range []string{r.cfg.namespace, r.cfg.createNamespace()} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		if _, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service account %s/default: %w", name, err)
		}
	}
	return nil
}

// waitQuiet waits up to cfg.quietWait for the machine's CPU to be under
// cfg.busyMax percent busy over half a second, and returns the last
// figure seen.
func (r *runner) waitQuiet() (float64, error) {
	busy, err := r.cfg.procs.WaitQuiet(r.cfg.busyMax, r.cfg.quietWait)
	if err == nil && busy > r.cfg.busyMax {
		r.logf("warning: CPU %.0f%% busy before the run; its figures are noisy", busy)
	}
	return busy, err
}

// pod returns the pod the benchmark creates: one container, as small as a
// controller's typical pod.
func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10", Command: []string{"/pause"},
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}
}

// createPods creates objects of the run's kind (pods, or custom
// resources) in namespace with one closed-loop worker per client until
// limit have been attempted or, when d > 0, d has passed.
func (r *runner) createPods(ctx context.Context, cs []creator, namespace, prefix string, d time.Duration, limit int64) createPhase {
	p := createPhase{Clients: len(cs)}
	if limit <= 0 || len(cs) == 0 {
		return p
	}
	labels := map[string]string{"app": "bench"}
	var next, ok, failed atomic.Int64
	cpu0, _ := r.cfg.procs.CPU()
	start := time.Now()
	var deadline time.Time
	if d > 0 {
		deadline = start.Add(d)
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > limit || (!deadline.IsZero() && time.Now().After(deadline)) {
					return
				}
				if err := c.create(ctx, namespace, fmt.Sprintf("%s-%d", prefix, n), labels); err != nil {
					failed.Add(1)
					r.fail(err)
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, _ := r.cfg.procs.CPU()
	p.Pods, p.Errors = ok.Load(), failed.Load()
	p.Seconds = elapsed.Seconds()
	p.PerSecond = perSecond(p.Pods, elapsed)
	if p.Pods > 0 {
		p.CPUusPerOp = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(p.Pods)
	}
	return p
}

// lists times full LISTs of the namespace's objects, alternating JSON
// and protobuf (JSON alone for custom resources, which kube serves in JSON
// only), after one untimed LIST of each whose item count is checked.
func (r *runner) lists(ctx context.Context, res *result) error {
	hc, err := rest.HTTPClientFor(r.rest)
	if err != nil {
		return err
	}
	url := strings.TrimSuffix(r.rest.Host, "/") + "/api/v1/namespaces/" + r.cfg.namespace + "/pods"
	types := []string{jsonType, protobuf}
	if r.cfg.kind == kindCR {
		url = strings.TrimSuffix(r.rest.Host, "/") + "/apis/" + widgets.GroupVersion().String() + "/namespaces/" + r.cfg.namespace + "/" + widgets.Resource
		types = []string{jsonType}
	}
	for _, ct := range types {
		body, d, enc, err := r.list(ctx, hc, url, ct, true)
		if err != nil {
			return err
		}
		if ct == jsonType {
			res.ListJSONFirst = ms(d.elapsed)
		} else {
			res.ListProtoFirst = ms(d.elapsed)
		}
		if err := checkList(r.cfg.kind, ct, body, res.Pods); err != nil {
			return err
		}
		res.ListEncoding = enc
	}
	// The server's CPU is read around each LIST and summed per content
	// type: CPU per LIST holds on a busy machine, where its time does not.
	var cpuJSON, cpuProto time.Duration
	for range r.cfg.lists {
		for _, ct := range types {
			cpu0, _ := r.cfg.procs.CPU()
			_, d, _, err := r.list(ctx, hc, url, ct, false)
			cpu1, _ := r.cfg.procs.CPU()
			if err != nil {
				r.fail(err)
				continue
			}
			if ct == jsonType {
				res.ListJSONms = append(res.ListJSONms, ms(d.elapsed))
				res.ListJSONBytes = d.wire
				cpuJSON += cpu1 - cpu0
			} else {
				res.ListProtoms = append(res.ListProtoms, ms(d.elapsed))
				res.ListProtoBytes = d.wire
				cpuProto += cpu1 - cpu0
			}
		}
	}
	res.ListJSONMedian, res.ListProtoMedian = bench.Median(res.ListJSONms), bench.Median(res.ListProtoms)
	res.ListJSONCPUms, res.ListProtoCPUms = meanMs(cpuJSON, len(res.ListJSONms)), meanMs(cpuProto, len(res.ListProtoms))
	return nil
}

// checkList checks that a LIST's body in content type ct holds want
// objects of the kind.
func checkList(kind, ct string, body []byte, want int) error {
	if kind == kindCR {
		k, n, err := countItems(body)
		if err != nil {
			return fmt.Errorf("decode LIST (%s): %w", ct, err)
		}
		if k != "WidgetList" || n != want {
			return fmt.Errorf("LIST (%s): got a %s of %d items, want a WidgetList of %d", ct, k, n, want)
		}
		return nil
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return fmt.Errorf("decode LIST (%s): %w", ct, err)
	}
	pl, ok := obj.(*corev1.PodList)
	if !ok || len(pl.Items) != want {
		return fmt.Errorf("LIST (%s): got %T, want a PodList of %d pods", ct, obj, want)
	}
	return nil
}

// meanMs is total in milliseconds shared among n, 0 when n is 0.
func meanMs(total time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return ms(total) / float64(n)
}

// listTiming is one LIST: the time from sending it to the last byte of
// the decompressed body, and the bytes on the wire.
type listTiming struct {
	elapsed time.Duration
	wire    int64
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// list sends one LIST and reads the whole answer, decompressing it when
// the server gzipped it; keep returns the body.
func (r *runner) list(ctx context.Context, hc *http.Client, url, accept string, keep bool) ([]byte, listTiming, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, listTiming{}, "", err
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "apiload")
	if r.cfg.listGzip {
		// What client-go's transport asks for by default; set here so
		// that the answer's encoding and size on the wire can be seen.
		req.Header.Set("Accept-Encoding", "gzip")
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, listTiming{}, "", err
	}
	defer resp.Body.Close()
	wire := &countingReader{r: resp.Body}
	var body io.Reader = wire
	enc := resp.Header.Get("Content-Encoding")
	if enc == "gzip" {
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return nil, listTiming{}, enc, fmt.Errorf("LIST (%s): %w", accept, err)
		}
		body = zr
	}
	var out []byte
	if keep {
		out, err = io.ReadAll(body)
	} else {
		_, err = io.Copy(io.Discard, body)
	}
	t := listTiming{elapsed: time.Since(start), wire: wire.n}
	if err != nil {
		return nil, t, enc, fmt.Errorf("LIST (%s): read: %w", accept, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, t, enc, fmt.Errorf("LIST (%s): %s", accept, resp.Status)
	}
	return out, t, enc, nil
}

// watchFanOut starts cfg.watchers watches on the namespace's pods, each on
// its own connection, then creates cfg.watchEvents pods one at a time,
// cfg.watchInterval apart, and measures from each create's response to
// each watcher's ADDED event.
func (r *runner) watchFanOut(ctx context.Context, admin kubernetes.Interface) (watchPhase, error) {
	cfg := r.cfg
	wp := watchPhase{Watchers: cfg.watchers, Events: cfg.watchEvents}
	pods := admin.CoreV1().Pods(cfg.namespace)
	// Watch from the current resource version, so that no watcher gets
	// the existing pods as initial events.
	l, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return wp, fmt.Errorf("read the resource version: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sel := watchLabel + "=watch"
	seen := make([]map[string]time.Time, cfg.watchers)
	var all sync.WaitGroup // every watcher has seen every pod, or given up
	var wg sync.WaitGroup  // every watcher goroutine has returned
	for i := range cfg.watchers {
		c, err := r.client()
		if err != nil {
			return wp, err
		}
		w, err := c.CoreV1().Pods(cfg.namespace).Watch(wctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion, LabelSelector: sel})
		if err != nil {
			return wp, fmt.Errorf("start watcher %d: %w", i, err)
		}
		m := make(map[string]time.Time, cfg.watchEvents)
		seen[i] = m
		all.Add(1)
		wg.Go(func() {
			defer w.Stop()
			done := false
			for ev := range w.ResultChan() {
				at := time.Now()
				switch ev.Type {
				case watch.Added:
					if p, ok := ev.Object.(*corev1.Pod); ok && !done {
						m[p.Name] = at
						if len(m) == cfg.watchEvents {
							done = true
							all.Done()
						}
					}
				case watch.Error:
					// client-go reports its own cancellation at the
					// end as an error event.
					if wctx.Err() == nil {
						r.fail(apierrors.FromObject(ev.Object))
					}
				}
			}
			if !done {
				all.Done()
			}
		})
	}

	created := make(map[string]time.Time, cfg.watchEvents)
	labels := map[string]string{"app": "bench", watchLabel: "watch"}
	tick := time.NewTicker(cfg.watchInterval)
	for i := range cfg.watchEvents {
		name := fmt.Sprintf("watch-%d", i)
		if _, err := pods.Create(ctx, pod(name, labels), metav1.CreateOptions{}); err != nil {
			r.fail(err)
		} else {
			created[name] = time.Now()
		}
		<-tick.C
	}
	tick.Stop()
	finished := make(chan struct{})
	go func() { all.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(cfg.watchTimeout):
		r.logf("warning: not every watcher saw every pod within %v", cfg.watchTimeout)
	}
	cancel()
	wg.Wait()
	d, missed := delays(created, seen)
	wp.Missed, wp.Events = missed, len(created)
	wp.P50ms, wp.P99ms, wp.MaxMs = ms(quantile(d, 0.5)), ms(quantile(d, 0.99)), ms(quantile(d, 1))
	return wp, nil
}
