package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/store/etcd/etcdtest"
)

// TestGatewayUpstreams_J5 runs two `kubegate apiserver` processes on one
// etcd behind one `kubegate gateway` given both as --upstream, and 16
// client-go writers creating ConfigMaps through it. One API server is
// killed with SIGKILL: at most 1% of the requests in the fault window
// fail, and every create the gateway acknowledged is in the store. The
// killed server is started again and readmitted. It logs the time to
// eject and to readmit (docs/kubernetes-behaviour.md, J.5).
func TestGatewayUpstreams_J5(t *testing.T) {
	dir := t.TempDir()
	if res := kubegate(t, "pki", "init", "--dir", dir); res.code != 0 {
		t.Fatalf("pki init: %+v", res)
	}
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	etcd, err := etcdtest.Start(t.TempDir(), &transport.TLSInfo{
		CertFile: pki("etcd/server.crt"), KeyFile: pki("etcd/server.key"), TrustedCAFile: pki("etcd/ca.crt"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	etcdFlags := []string{"--etcd-servers", etcd.TLSURL, "--etcd-cafile", pki("etcd/ca.crt"),
		"--etcd-certfile", pki("apiserver-etcd-client.crt"), "--etcd-keyfile", pki("apiserver-etcd-client.key")}
	portB := freePort(t)
	a := startAPIServer(t, dir, "", 0, etcdFlags...)
	b := startAPIServer(t, dir, "", portB, etcdFlags...)
	hostB := "127.0.0.1:" + strconv.Itoa(portB)

	// The gateway, with the health check's defaults.
	port := freePort(t)
	stderr := &testwait.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	gw := exec.CommandContext(ctx, kubegateBin, "gateway",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
		"--client-ca-file", pki("ca.crt"), "--service-account-key-file", pki("sa.pub"),
		"--upstream", a.url, "--upstream", b.url, "--upstream-ca-file", pki("ca.crt"),
		"--proxy-client-cert-file", pki("front-proxy-client.crt"), "--proxy-client-key-file", pki("front-proxy-client.key"))
	gw.Stderr = stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = gw.Wait() })
	gwURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	testwait.For(t, 30*time.Second, "kubegate gateway serving", func() (bool, string) {
		return strings.Contains(stderr.String(), "kubegate gateway serving on"), "not; stderr:\n" + stderr.String()
	})
	if want := a.url + ", " + b.url; !strings.Contains(stderr.String(), want) {
		t.Errorf("gateway start line does not name both upstreams %q:\n%s", want, stderr)
	}

	// The gateway's metrics, read as admin, tell an upstream's health.
	adminPair := clientPairFromKubeconfig(t, filepath.Join(dir, "admin.conf"))
	caPEM, err := os.ReadFile(pki("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	metricsClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{adminPair}}}}
	healthyB := func() string {
		resp, err := metricsClient.Get(gwURL + "/kubegate/metrics")
		if err != nil {
			return "error: " + err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		prefix := `kubegate_gateway_upstream_healthy{upstream="` + hostB + `"} `
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				return v
			}
		}
		return fmt.Sprintf("no series (status %d)", resp.StatusCode)
	}
	if got := healthyB(); got != "1" {
		t.Fatalf("upstream B healthy = %s before the fault, want 1", got)
	}

	cfg, err := clientcmd.BuildConfigFromFlags(gwURL, filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = -1, 0, 15*time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// 16 writers, each recording when each create started and how it
	// ended.
	type outcome struct {
		start, end time.Time
		name       string
		err        error
	}
	var mu sync.Mutex
	var outcomes []outcome
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var acked atomic.Int64
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%d", w, n)
				start := time.Now()
				_, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(),
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": strconv.Itoa(n)}},
					metav1.CreateOptions{})
				if err == nil {
					acked.Add(1)
				}
				mu.Lock()
				outcomes = append(outcomes, outcome{start, time.Now(), name, err})
				mu.Unlock()
			}
		}()
	}
	testwait.For(t, 60*time.Second, "writes before the fault", func() (bool, string) {
		return acked.Load() >= 300, fmt.Sprintf("%d acknowledged", acked.Load())
	})

	killed := time.Now()
	if err := b.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = b.cmd.Wait()
	testwait.For(t, 30*time.Second, "upstream B ejected", func() (bool, string) {
		v := healthyB()
		return v == "0", "healthy " + v
	})
	ejected := time.Since(killed)
	atEject := acked.Load()
	testwait.For(t, 60*time.Second, "writes with B down", func() (bool, string) {
		return acked.Load() >= atEject+1500, fmt.Sprintf("%d acknowledged", acked.Load())
	})

	startAPIServer(t, dir, "", portB, etcdFlags...)
	serving := time.Now()
	testwait.For(t, 30*time.Second, "upstream B readmitted", func() (bool, string) {
		v := healthyB()
		return v == "1", "healthy " + v
	})
	readmitted := time.Now()
	atReadmit := acked.Load()
	testwait.For(t, 60*time.Second, "writes after the readmission", func() (bool, string) {
		return acked.Load() >= atReadmit+300, fmt.Sprintf("%d acknowledged", acked.Load())
	})
	close(stop)
	wg.Wait()

	var inWindow, failedInWindow, failed int
	var ackedNames []string
	for _, o := range outcomes {
		// In the fault window: in flight at some time from the kill to
		// the readmission.
		in := !o.end.Before(killed) && o.start.Before(readmitted)
		if in {
			inWindow++
		}
		if o.err != nil {
			failed++
			if in {
				failedInWindow++
			}
			// Only a create in flight on the killed server fails, with
			// the gateway's 502 saying it may have been applied.
			if apierrors.ReasonForError(o.err) != metav1.StatusReasonInternalError || !strings.Contains(o.err.Error(), "may have been applied") {
				t.Errorf("create %s failed with %v, want the gateway's 502", o.name, o.err)
			}
			continue
		}
		ackedNames = append(ackedNames, o.name)
	}
	t.Logf("eject %v after the kill; readmit %v after B served again; fault window %v: %d requests, %d failed; %d requests in all, %d failed",
		ejected.Round(time.Millisecond), readmitted.Sub(serving).Round(time.Millisecond), readmitted.Sub(killed).Round(time.Millisecond),
		inWindow, failedInWindow, len(outcomes), failed)
	if inWindow == 0 || failedInWindow*100 > inWindow {
		t.Errorf("%d of %d requests in the fault window failed, want at most 1%%", failedInWindow, inWindow)
	}
	if ejected > 10*time.Second {
		t.Errorf("B ejected %v after the kill, want within a few seconds", ejected)
	}

	// Every acknowledged create is in the store, read from A directly.
	list, err := clientset(t, dir, a.url).CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, cm := range list.Items {
		stored[cm.Name] = true
	}
	for _, name := range ackedNames {
		if !stored[name] {
			t.Errorf("acknowledged ConfigMap %s is not in the store", name)
		}
	}
}

// clientPairFromKubeconfig returns the client certificate of a
// kubeconfig's current user.
func clientPairFromKubeconfig(t *testing.T, path string) tls.Certificate {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := cfg.CertData, cfg.KeyData
	if len(certPEM) == 0 {
		if certPEM, err = os.ReadFile(cfg.CertFile); err != nil {
			t.Fatal(err)
		}
		if keyPEM, err = os.ReadFile(cfg.KeyFile); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}
