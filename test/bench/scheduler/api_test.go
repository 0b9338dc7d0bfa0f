package scheduler

import (
	"context"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/internal/benchcpu"
	"github.com/kubegate/kubegate/scheduler"
	"github.com/kubegate/kubegate/scheduler/plugins"
	"github.com/kubegate/kubegate/store/bolt"
)

// Through the real API: the size of kube-scheduler's scheduler_perf
// SchedulingBasic/5000Nodes_10000Pods case.
const (
	apiNodes    = 5000
	apiPods     = 10000
	apiCreators = 32
	apiNS       = "bench"
)

// BenchmarkScheduleAPI runs the scheduler against kubegate's API server in
// process: a durable bolt store (every write synced), HTTP/2 over TLS,
// client-go with no rate limit. It registers 5,000 ready nodes (4 cpu,
// 32 GiB, 110 pods), starts the scheduler, then creates 10,000 pods of
// 100m / 500 MiB from 32 concurrent clients, and watches the pods until
// every one is bound. Each iteration is one whole run; it reports pods/s
// from the first create to the last binding seen, the p50 and p99 of each
// pod's time from its create call to its binding, the process CPU of the
// run (cpu-ns/op: API server, store, scheduler and clients together) and
// how many connections the clients opened.
//
//	go test -c -o /tmp/schedbench ./test/bench/scheduler
//	/tmp/schedbench -test.run '^$' -test.bench ScheduleAPI -test.benchtime 1x -test.cpu 2
func BenchmarkScheduleAPI(b *testing.B) {
	for range b.N {
		runScheduleAPI(b)
	}
}

func runScheduleAPI(b *testing.B) {
	b.StopTimer()
	st, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := apiserver.New(apiserver.Config{
		Store:     st,
		Resources: registry.Resources(),
		Authenticator: authn.RequestFunc(func(*http.Request) (*authn.Response, bool, error) {
			return &authn.Response{User: authn.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}}, true, nil
		}),
		Authorizer: authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.Allow, "", nil
		}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.EnableHTTP2 = true
	var conns atomic.Int64 // connections the clients opened
	hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	hs.StartTLS()
	defer hs.Close()
	cfg := &rest.Config{
		Host:            hs.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})},
		QPS:             -1,
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apiNS}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	parallelDo(b, apiNodes, apiCreators, func(i int) error { return createNode(ctx, client, i) })

	factory := informers.NewSharedInformerFactory(client, 0)
	// The pods have no labels, owners or services, so default spreading
	// has nothing to select; the fixed empty sources spare informers on
	// apps/v1, which this API server does not serve.
	prof, err := plugins.DefaultProfile(plugins.Args{Spread: &plugins.Objects{}})
	if err != nil {
		b.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.Config{Client: client, Profile: prof, Factory: factory,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Run(ctx) }()
	factory.WaitForCacheSync(ctx.Done())

	w, err := client.CoreV1().Pods(apiNS).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	created := make([]int64, apiPods) // unix ns of each create call
	bound := make([]int64, apiPods)
	allBound := make(chan struct{})
	go func() {
		n := 0
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Spec.NodeName == "" {
				continue
			}
			i, err := strconv.Atoi(strings.TrimPrefix(p.Name, "pod-"))
			if err != nil || i < 0 || i >= apiPods || bound[i] != 0 {
				continue
			}
			bound[i] = time.Now().UnixNano()
			if n++; n == apiPods {
				close(allBound)
				return
			}
		}
	}()

	cpu := benchcpu.Start()
	start := time.Now()
	b.StartTimer()
	parallelDo(b, apiPods, apiCreators, func(i int) error {
		p := makePod(i)
		p.Namespace, p.UID = apiNS, ""
		created[i] = time.Now().UnixNano()
		_, err := client.CoreV1().Pods(apiNS).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	createdAll := time.Since(start)
	select {
	case <-allBound:
	case <-time.After(5 * time.Minute):
		b.Fatalf("not every pod was bound within 5 minutes")
	}
	b.StopTimer()
	elapsed := time.Since(start)
	cpu.Report(b)

	// The bindings are in the store: list the pods back.
	list, err := client.CoreV1().Pods(apiNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range list.Items {
		if p.Spec.NodeName == "" {
			b.Fatalf("pod %s is not bound in the store", p.Name)
		}
		perNode[p.Spec.NodeName]++
	}
	if len(list.Items) != apiPods {
		b.Fatalf("listed %d pods, want %d", len(list.Items), apiPods)
	}
	for node, n := range perNode {
		if n > 110 {
			b.Fatalf("node %s has %d pods, more than its 110", node, n)
		}
	}
	lat := make([]time.Duration, apiPods)
	for i := range lat {
		lat[i] = time.Duration(bound[i] - created[i])
	}
	slices.Sort(lat)
	b.ReportMetric(float64(apiPods)/elapsed.Seconds(), "pods/s")
	b.ReportMetric(float64(lat[apiPods/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[apiPods*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(createdAll.Seconds(), "create-s")
	b.ReportMetric(float64(len(perNode)), "nodes-used")
	// Every client shares one HTTP/2 connection unless it runs out of
	// concurrent streams.
	b.ReportMetric(float64(conns.Load()), "conns")

	cancel()
	if err := <-schedDone; err != nil {
		b.Fatal(err)
	}
}

// parallelDo runs fn(0..n-1) on workers goroutines and fails b on the
// first error.
func parallelDo(b *testing.B, n, workers int, fn func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// createNode registers a ready node like makeNode's, with capacity.
func createNode(ctx context.Context, client kubernetes.Interface, i int) error {
	n := makeNode(i)
	n.Status.Capacity = n.Status.Allocatable
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"}}
	got, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if q := got.Status.Allocatable[v1.ResourcePods]; q.Cmp(resource.MustParse("110")) != 0 {
		// The API server kept no status on create: set it.
		got.Status = n.Status
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{})
	}
	return err
}
