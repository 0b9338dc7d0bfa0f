package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubegate/kubegate/gateway"
)

// TestGatewayHTTP2FastPathIsOptIn_A7 parses kubegate gateway's flags:
// HTTP/2 goes to Go's server unless --http2-fast-path is given, the
// HTTP/1.1 fast path stays on by default, and --http2-fast-path without
// the HTTP/1.1 fast path, under which it could not run, is refused.
func TestGatewayHTTP2FastPathIsOptIn_A7(t *testing.T) {
	required := []string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--client-ca-file", "ca", "--upstream", "https://127.0.0.1:6444"}
	for _, tc := range []struct {
		args         []string
		wantH1       bool
		wantH2       bool
		wantValidate string // "" for none
	}{
		{nil, true, false, ""},
		{[]string{"--http2-fast-path"}, true, true, ""},
		{[]string{"--http2-fast-path=false"}, true, false, ""},
		{[]string{"--http1-fast-path=false"}, false, false, ""},
		{[]string{"--http2-fast-path", "--http1-fast-path=false"}, false, true, "--http2-fast-path needs --http1-fast-path"},
	} {
		t.Run(strings.Join(append([]string{"flags"}, tc.args...), " "), func(t *testing.T) {
			o := &gatewayOptions{Options: gateway.Defaults()}
			fs := pflag.NewFlagSet("gateway", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(append(append([]string(nil), required...), tc.args...)); err != nil {
				t.Fatal(err)
			}
			t.Logf("%v: HTTP1FastPath %v, HTTP2FastPath %v", tc.args, o.HTTP1FastPath, o.HTTP2FastPath)
			if o.HTTP1FastPath != tc.wantH1 || o.HTTP2FastPath != tc.wantH2 {
				t.Errorf("HTTP1FastPath %v, HTTP2FastPath %v; want %v, %v", o.HTTP1FastPath, o.HTTP2FastPath, tc.wantH1, tc.wantH2)
			}
			err := o.Validate()
			if got := ""; err != nil {
				got = err.Error()
				if got != tc.wantValidate {
					t.Errorf("Validate: %q, want %q", got, tc.wantValidate)
				}
			} else if tc.wantValidate != "" {
				t.Errorf("Validate: no error, want %q", tc.wantValidate)
			}
		})
	}
}

// TestGatewaySeveralUpstreams_J5 parses --upstream repeated and as a
// comma-separated list, the health check's defaults, and refuses a bad
// entry with one line naming it.
func TestGatewaySeveralUpstreams_J5(t *testing.T) {
	required := []string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--client-ca-file", "ca"}
	for _, tc := range []struct {
		args         []string
		want         []string
		wantValidate string // "" for none
	}{
		{[]string{"--upstream", "https://127.0.0.1:6444"}, []string{"https://127.0.0.1:6444"}, ""},
		{[]string{"--upstream", "https://10.0.0.1:6443", "--upstream", "https://10.0.0.2:6443"}, []string{"https://10.0.0.1:6443", "https://10.0.0.2:6443"}, ""},
		{[]string{"--upstream", "https://10.0.0.1:6443,https://10.0.0.2:6443"}, []string{"https://10.0.0.1:6443", "https://10.0.0.2:6443"}, ""},
		{[]string{"--upstream", "https://10.0.0.1:6443,10.0.0.2:6443"}, nil, `--upstream "10.0.0.2:6443" is not an http(s) URL`},
		{[]string{"--upstream", "https://10.0.0.1:6443,http://10.0.0.2:6443"}, nil, `--upstream "http://10.0.0.2:6443" has another scheme than "https://10.0.0.1:6443": every upstream is reached the same way`},
		{[]string{"--upstream", "https://10.0.0.1:6443,https://10.0.0.1:6443"}, nil, `--upstream "https://10.0.0.1:6443" is given twice`},
		{[]string{"--upstream", "https://10.0.0.1:6443", "--upstream-health-check-fall", "0"}, nil, "--upstream-health-check-fall 0 is not a positive count"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := &gatewayOptions{Options: gateway.Defaults()}
			fs := pflag.NewFlagSet("gateway", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(append(append([]string(nil), required...), tc.args...)); err != nil {
				t.Fatal(err)
			}
			hc := o.HealthCheck
			if hc.Interval != 2*time.Second || hc.Timeout != time.Second || hc.Rise != 2 || (hc.Fall != 3 && tc.wantValidate == "") {
				t.Errorf("health check %+v, want inter 2s, timeout 1s, rise 2, fall 3", hc)
			}
			err := o.Validate()
			switch {
			case tc.wantValidate == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantValidate != "" && (err == nil || err.Error() != tc.wantValidate):
				t.Fatalf("Validate: %v, want %q", err, tc.wantValidate)
			case tc.wantValidate == "" && strings.Join(o.Upstreams, " ") != strings.Join(tc.want, " "):
				t.Errorf("upstreams %q, want %q", o.Upstreams, tc.want)
			}
		})
	}
}

// TestGatewayConsoleFlags_K1 parses --console and --console-pki-dir: the
// console is on by default with no PKI view, and a PKI directory that is
// not one, or without the console, is refused with one line naming the
// flag.
func TestGatewayConsoleFlags_K1(t *testing.T) {
	required := []string{"--tls-cert-file", "c", "--tls-private-key-file", "k", "--client-ca-file", "ca", "--upstream", "https://127.0.0.1:6444"}
	dir := t.TempDir()
	for _, tc := range []struct {
		args         []string
		wantConsole  bool
		wantDir      string
		wantValidate string
	}{
		{nil, true, "", ""},
		{[]string{"--console=false"}, false, "", ""},
		{[]string{"--console-pki-dir", dir}, true, dir, ""},
		{[]string{"--console-pki-dir", dir + "/missing"}, true, dir + "/missing", `--console-pki-dir "` + dir + `/missing" is not a directory`},
		{[]string{"--console=false", "--console-pki-dir", dir}, false, dir, "--console-pki-dir needs --console"},
	} {
		t.Run(strings.Join(append([]string{"flags"}, tc.args...), " "), func(t *testing.T) {
			o := &gatewayOptions{Options: gateway.Defaults()}
			fs := pflag.NewFlagSet("gateway", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(append(append([]string(nil), required...), tc.args...)); err != nil {
				t.Fatal(err)
			}
			if o.Console != tc.wantConsole || o.ConsolePKIDir != tc.wantDir {
				t.Errorf("Console %v, ConsolePKIDir %q; want %v, %q", o.Console, o.ConsolePKIDir, tc.wantConsole, tc.wantDir)
			}
			got := ""
			if err := o.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.wantValidate {
				t.Errorf("Validate: %q, want %q", got, tc.wantValidate)
			}
		})
	}
}
