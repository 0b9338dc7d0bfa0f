package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Both commands take kube-controller-manager's and kube-scheduler's
// leader election and connection flags, with their defaults.
func TestElectionAndConnectionFlagDefaults_J1(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s := streams{in: strings.NewReader(""), out: &out, err: &out}
	for cmd, lease := range map[string]string{"controllers": "kube-controller-manager", "scheduler": "kube-scheduler"} {
		fs := newControllersCmd(s).Flags()
		if cmd == "scheduler" {
			fs = newSchedulerCmd(s).Flags()
		}
		for name, want := range map[string]string{
			"leader-elect":                    "true",
			"leader-elect-lease-duration":     "15s",
			"leader-elect-renew-deadline":     "10s",
			"leader-elect-retry-period":       "2s",
			"leader-elect-resource-lock":      "leases",
			"leader-elect-resource-name":      lease,
			"leader-elect-resource-namespace": "kube-system",
			"master":                          "",
			"kube-api-content-type":           "application/vnd.kubernetes.protobuf",
		} {
			f := fs.Lookup(name)
			switch {
			case f == nil:
				t.Errorf("kubegate %s has no --%s", cmd, name)
			case f.DefValue != want:
				t.Errorf("kubegate %s --%s defaults to %q, want %q", cmd, name, f.DefValue, want)
			}
		}
	}
}

// A bad election or connection flag is one line naming it, exit 2,
// before anything is read or reached.
func TestElectionAndConnectionFlagErrors_J1(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--leader-elect-lease-duration", "10s"}, "--leader-elect-lease-duration 10s: must be greater than --leader-elect-renew-deadline (10s)"},
		{[]string{"--leader-elect-renew-deadline", "0s"}, "--leader-elect-renew-deadline 0s: must be greater than zero"},
		{[]string{"--leader-elect-retry-period", "-1s"}, "--leader-elect-retry-period -1s: must be greater than zero"},
		{[]string{"--leader-elect-retry-period", "9s"}, "--leader-elect-renew-deadline 10s: must be greater than --leader-elect-retry-period (9s)"},
		{[]string{"--leader-elect-resource-lock", "endpoints"}, `--leader-elect-resource-lock "endpoints": must be "leases"`},
		{[]string{"--leader-elect-resource-name", ""}, "--leader-elect-resource-name: required"},
		{[]string{"--leader-elect-resource-namespace", "Kube-System"}, `--leader-elect-resource-namespace "Kube-System"`},
		{[]string{"--kube-api-content-type", "application/yaml"}, `--kube-api-content-type "application/yaml": want application/vnd.kubernetes.protobuf or application/json`},
		{[]string{"--kube-api-burst", "-1"}, "--kube-api-burst -1: must be non-negative"},
	} {
		for _, cmd := range []string{"controllers", "scheduler"} {
			t.Run(cmd+" "+strings.Join(tc.args, " "), func(t *testing.T) {
				t.Parallel()
				args := append([]string{cmd, "--kubeconfig", "no-such.conf"}, tc.args...)
				code, out, errOut := runCLI(t, "", args...)
				if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, out, errOut, tc.want)
				}
			})
		}
	}
	// Turned off, the election's settings are not checked, as in kube.
	code, _, errOut := runCLI(t, "", "controllers", "--kubeconfig", "no-such.conf", "--leader-elect=false", "--leader-elect-retry-period", "0s")
	if code == 2 || !strings.Contains(errOut, "no-such.conf") {
		t.Errorf("--leader-elect=false: exit %d, stderr %q; want the kubeconfig to be the fault", code, errOut)
	}
}

// --master replaces the kubeconfig's server; --kube-api-content-type sets
// the media type of requests, protobuf by default with JSON accepted back.
func TestAPIConnectionRESTConfig_J1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.conf")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://kubeconfig.example:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		conn                apiConnection
		host, ctype, accept string
		qps                 float32
		burst               int
	}{
		{apiConnection{kubeconfig: path, contentType: "application/vnd.kubernetes.protobuf", qps: 20, burst: 30},
			"https://kubeconfig.example:6443", "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json", 20, 30},
		{apiConnection{kubeconfig: path, master: "https://master.example:443", contentType: "application/json", qps: 50, burst: 100},
			"https://master.example:443", "application/json", "application/json", 50, 100},
	} {
		rc, err := tc.conn.restConfig()
		if err != nil {
			t.Fatal(err)
		}
		if rc.Host != tc.host || rc.ContentType != tc.ctype || rc.AcceptContentTypes != tc.accept || rc.QPS != tc.qps || rc.Burst != tc.burst {
			t.Errorf("%+v: host %q content type %q accept %q qps %v burst %d; want %q %q %q %v %d", tc.conn, rc.Host, rc.ContentType,
				rc.AcceptContentTypes, rc.QPS, rc.Burst, tc.host, tc.ctype, tc.accept, tc.qps, tc.burst)
		}
	}
	if _, err := (&apiConnection{}).restConfig(); err == nil || err.Error() != "--kubeconfig is required" {
		t.Errorf("no kubeconfig: %v", err)
	}
}
