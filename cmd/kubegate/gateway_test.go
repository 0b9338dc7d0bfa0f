package main

import (
	"strings"
	"testing"

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
