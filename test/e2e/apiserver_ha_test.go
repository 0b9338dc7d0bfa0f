package e2e

//lint:file-ignore SA1019 v1 Endpoints are read as kube-apiserver writes them (J.3)

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/store/etcd/etcdtest"
)

// TestAPIServersHA_J3 runs two `kubegate apiserver` processes on one etcd,
// each bound to an address of its own (added to lo, in the benchmarking
// range) and advertising it by kube-apiserver's rule: the kubernetes
// Endpoints and EndpointSlice list both; one killed with SIGKILL drops
// out once its lease expires (15 s), and is listed again when it comes
// back.
func TestAPIServersHA_J3(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("adding addresses to lo needs root")
		}
		t.Skip("adding addresses to lo needs root")
	}
	ipTool := requireTool(t, "ip")
	addrs := []string{"198.19.35.11", "198.19.35.12"}
	for _, a := range addrs {
		out, err := exec.Command(ipTool, "addr", "add", a+"/32", "dev", "lo").CombinedOutput()
		if err != nil && !strings.Contains(string(out), "exists") {
			t.Fatalf("ip addr add %s: %v: %s", a, err, out)
		}
		if err == nil {
			t.Cleanup(func() { _ = exec.Command(ipTool, "addr", "del", a+"/32", "dev", "lo").Run() })
		}
	}
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
	ports := []int{freePort(t), freePort(t)}
	a := startBoundAPIServer(t, dir, addrs[0], ports[0], etcdFlags)
	b := startBoundAPIServer(t, dir, addrs[1], ports[1], etcdFlags)
	csB := boundClientset(t, dir, b.url)

	waitKubernetesEndpoints(t, csB, 30*time.Second, addrs...)
	ctx := context.Background()
	ep, err := csB.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := ep.Subsets[0].Ports; len(p) != 1 || p[0].Name != "https" || (int(p[0].Port) != ports[0] && int(p[0].Port) != ports[1]) {
		t.Errorf("endpoint ports: got %+v, want https on a server's port", p)
	}

	// kill -9: no clean stop, the lease runs out.
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	took := waitKubernetesEndpoints(t, csB, 60*time.Second, addrs[1])
	// The lease was renewed at most 10 s before the kill and lasts 15 s;
	// a generous margin on top.
	if took > 25*time.Second {
		t.Errorf("the killed server dropped out after %v, want about its lease's 15 s", took)
	}

	a = startBoundAPIServer(t, dir, addrs[0], ports[0], etcdFlags)
	waitKubernetesEndpoints(t, csB, 30*time.Second, addrs...)
	waitKubernetesEndpoints(t, boundClientset(t, dir, a.url), 30*time.Second, addrs...)
}

// startBoundAPIServer runs `kubegate apiserver` bound to addr:port, which
// it advertises, until the test ends.
func startBoundAPIServer(t *testing.T, dir, addr string, port int, extra []string) *apiserverProc {
	t.Helper()
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	args := append([]string{"apiserver", "--bind-address", addr, "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
		"--client-ca-file", pki("ca.crt"),
		"--service-account-key-file", pki("sa.pub"), "--service-account-signing-key-file", pki("sa.key")}, extra...)
	p := &apiserverProc{url: "https://" + net.JoinHostPort(addr, strconv.Itoa(port)), stderr: &testwait.Buffer{}}
	p.cmd = exec.Command(kubegateBin, args...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	testwait.For(t, 30*time.Second, "kubegate apiserver serving on "+addr, func() (bool, string) {
		if p.cmd.ProcessState != nil {
			t.Fatalf("kubegate apiserver exited; stderr:\n%s", p.stderr)
		}
		return strings.Contains(p.stderr.String(), "kubegate apiserver serving on"), "not; stderr:\n" + p.stderr.String()
	})
	return p
}

// boundClientset is admin.conf's client for the server at url, whose
// certificate names localhost and not the address it is bound to.
func boundClientset(t *testing.T, dir, url string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(url, filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = 5 * time.Second
	cfg.TLSClientConfig.ServerName = "localhost"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitKubernetesEndpoints waits until the kubernetes Endpoints and
// EndpointSlice both list exactly want, and returns how long it took.
func waitKubernetesEndpoints(t *testing.T, cs kubernetes.Interface, within time.Duration, want ...string) time.Duration {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	start := time.Now()
	testwait.For(t, within, fmt.Sprintf("the kubernetes endpoints listing %v", want), func() (bool, string) {
		ctx := context.Background()
		ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var eps, slice []string
		for _, sub := range ep.Subsets {
			for _, a := range sub.Addresses {
				eps = append(eps, a.IP)
			}
		}
		sl, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range sl.Endpoints {
			slice = append(slice, e.Addresses...)
		}
		slices.Sort(eps)
		slices.Sort(slice)
		return slices.Equal(eps, want) && slices.Equal(slice, want), fmt.Sprintf("endpoints %v, slice %v", eps, slice)
	})
	return time.Since(start)
}
