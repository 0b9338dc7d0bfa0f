package up

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/benchcpu"
)

// BenchmarkCreatePodThroughGateway creates pods with client-go through the
// whole path of `kubegate up`: TLS and x509 authentication at the gateway,
// forwarding with request-header identity, authentication, RBAC and
// admission at the API server, and a durable write to bbolt. 64 clients
// share one client-go connection pool, as 64 goroutines of one controller
// would. Client and servers share the machine's cores.
func BenchmarkCreatePodThroughGateway(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "cluster")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Start(ctx, Options{Dir: dir, SecurePort: port, InitPKI: initPKI, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.conf"))
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1e6, 1e6 // measure the server, not client-go's rate limiter
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	pods := cs.CoreV1().Pods("default")
	const clients = 64
	var next atomic.Int64
	create := func() error {
		n := next.Add(1)
		_, err := pods.Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", n), Labels: map[string]string{"app": "bench"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
				Image: "registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest", Command: []string{"app"},
				Ports: []corev1.ContainerPort{{ContainerPort: 2580}}}}},
		}, metav1.CreateOptions{})
		return err
	}
	for range clients { // warm the connection and the caches
		if err := create(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if err := create(); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d creates failed", f, b.N)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pods/s")
	cpu.Report(b)
}
