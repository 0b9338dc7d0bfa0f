package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUpAndAPIServerRefuseBadFlags(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"up without a port", []string{"up", "--dir", dir, "--secure-port", "0"}, "--secure-port 0 is not a port number"},
		{"up with negative nodes", []string{"up", "--dir", dir, "--nodes", "-2"}, "--nodes -2 is negative"},
		{"up without a dir", []string{"up", "--dir", ""}, "--dir is required"},
		{"up with node bootstrap but no nodes", []string{"up", "--dir", dir, "--nodes", "0", "--node-bootstrap"}, "--node-bootstrap needs simulated nodes (--nodes N)"},
		{"up with a negative run time", []string{"up", "--dir", dir, "--pod-run-time", "-1s"}, "--pod-run-time -1s is negative"},
		{"up with an API server address without a port", []string{"up", "--dir", dir, "--apiserver-address", "127.0.0.1"}, `--apiserver-address "127.0.0.1" is not HOST:PORT`},
		{"up with an API server address of a name", []string{"up", "--dir", dir, "--apiserver-address", "localhost:7000"}, `--apiserver-address "localhost:7000": "localhost" is not an IP address`},
		{"up with an API server address of a bad port", []string{"up", "--dir", dir, "--apiserver-address", "127.0.0.1:70000"}, `--apiserver-address "127.0.0.1:70000": "70000" is not a port number (0 for a free one)`},
		{"up with a negative signing duration", []string{"up", "--dir", dir, "--cluster-signing-duration", "-1h"}, "--cluster-signing-duration -1h0m0s is negative"},
		{"up with a zero autoscaler sync period", []string{"up", "--dir", dir, "--horizontal-pod-autoscaler-sync-period", "0s"},
			"--horizontal-pod-autoscaler-sync-period 0s: want a positive duration"},
		{"controllers with a negative downscale window", []string{"controllers", "--kubeconfig", "x", "--horizontal-pod-autoscaler-downscale-stabilization", "-1m"},
			"--horizontal-pod-autoscaler-downscale-stabilization -1m0s is negative"},
		{"up with a negative usage", []string{"up", "--dir", dir, "--usage-percent", "-1"}, "--usage-percent -1 is negative"},
		{"apiserver with a proxy certificate but no key", []string{"apiserver", "--tls-cert-file", "c", "--tls-private-key-file", "k", "--data-dir", dir,
			"--client-ca-file", "ca.crt", "--proxy-client-cert-file", "p.crt"}, "--proxy-client-cert-file and --proxy-client-key-file go together"},
		{"apiserver without a store", []string{"apiserver", "--tls-cert-file", "c", "--tls-private-key-file", "k"}, "give exactly one of --data-dir and --etcd-servers"},
		{"apiserver with a bad mode", []string{"apiserver", "--tls-cert-file", "c", "--tls-private-key-file", "k", "--data-dir", dir,
			"--authorization-mode", "Node"}, `--authorization-mode "Node" is not one of RBAC, AlwaysAllow`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tt.args...)
			if code != 2 || out != "" || errOut != "kubegate: "+tt.want+"\n" {
				t.Fatalf("got code %d stdout %q stderr %q, want 2 and %q", code, out, errOut, tt.want)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Fatalf("%s was created", dir)
			}
		})
	}
}

func TestInitPKIForUpIsPKIInit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	var errOut strings.Builder
	if err := initPKIForUp(dir, "https://127.0.0.1:7443", "10.96.0.0/12", streams{out: &strings.Builder{}, err: &errOut}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pki/ca.crt", "pki/sa.key", "pki/front-proxy-client.crt", "admin.conf", "super-admin.conf"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("pki init wrote no %s: %v", f, err)
		}
	}
	conf, err := os.ReadFile(filepath.Join(dir, "admin.conf"))
	if err != nil || !strings.Contains(string(conf), "server: https://127.0.0.1:7443") {
		t.Fatalf("admin.conf does not point at the gateway: %v\n%s", err, conf)
	}
}
