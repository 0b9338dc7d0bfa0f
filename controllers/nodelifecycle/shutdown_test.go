package nodelifecycle_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers/nodelifecycle"
)

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Run returns only after the pass that gives nodes their NoExecute taint
// has stopped: a taint write still under way when the controller is
// stopped ends before Run returns (G.13).
func TestRunWaitsForTheTaintPass_G13(t *testing.T) {
	s := apiservertest.Start(t)
	admin := s.Client
	readyNode(t, admin, "healthy")
	keepRenewing(t, admin, "healthy")
	readyNode(t, admin, "down")
	node, err := admin.CoreV1().Nodes().Get(context.Background(), "down", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(t, admin, node, corev1.ConditionFalse)

	// The write of the NoExecute taint hangs until the controller is
	// stopped, then lingers a while; if Run returns meanwhile, it has
	// left the taint pass behind.
	writing := make(chan struct{})
	runReturned := make(chan struct{})
	writeEnded := make(chan struct{})
	var startOnce, endOnce sync.Once
	var outlived atomic.Bool
	cfg := rest.CopyConfig(s.Config)
	cfg.ContentType = "application/json"
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPut || r.URL.Path != "/api/v1/nodes/down" || r.Body == nil {
				return rt.RoundTrip(r)
			}
			body, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				return nil, err
			}
			if !bytes.Contains(body, []byte(`"NoExecute"`)) {
				r.Body = io.NopCloser(bytes.NewReader(body))
				return rt.RoundTrip(r)
			}
			startOnce.Do(func() { close(writing) })
			<-r.Context().Done()
			select {
			case <-runReturned:
				outlived.Store(true)
			case <-time.After(time.Second):
			}
			endOnce.Do(func() { close(writeEnded) })
			return nil, r.Context().Err()
		})
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := nodelifecycle.New(client, nodelifecycle.Options{Logger: slog.New(slog.DiscardHandler),
		MonitorPeriod: 100 * time.Millisecond, GracePeriod: 20 * time.Second, EvictionQPS: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case <-writing:
	case <-time.After(30 * time.Second):
		cancel()
		<-done
		t.Fatal("the NotReady node's NoExecute taint was never written")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	close(runReturned)
	<-writeEnded
	if outlived.Load() {
		t.Error("Run returned while its taint pass was still writing")
	}
}
