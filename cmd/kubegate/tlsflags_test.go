package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBadTLSFlags checks that every serving command refuses a bad
// --tls-cipher-suites or --tls-min-version with one line and exit 2,
// before it opens any file.
func TestBadTLSFlags(t *testing.T) {
	dir := t.TempDir()
	commands := map[string][]string{
		"gateway": {"gateway", "--tls-cert-file", "c", "--tls-private-key-file", "k", "--client-ca-file", "ca", "--upstream", "https://127.0.0.1:6444"},
		"apiserver": {"apiserver", "--tls-cert-file", "c", "--tls-private-key-file", "k", "--client-ca-file", "ca",
			"--data-dir", filepath.Join(dir, "data")},
		"up": {"up", "--dir", filepath.Join(dir, "up")},
	}
	flags := []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,ECDHE-ECDSA-AES128-SHA"},
			`--tls-cipher-suites: cipher suite "ECDHE-ECDSA-AES128-SHA" is not supported`},
		{[]string{"--tls-min-version", "VersionTLS10"}, `--tls-min-version: TLS version "VersionTLS10" is not one of VersionTLS12, VersionTLS13`},
	}
	for name, base := range commands {
		for _, f := range flags {
			t.Run(name+" "+f.args[0], func(t *testing.T) {
				code, _, stderr := runCLI(t, "", append(append([]string(nil), base...), f.args...)...)
				if code == 0 || !strings.Contains(stderr, f.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("exit %d, stderr %q; want non-zero and one line with %q", code, stderr, f.want)
				}
			})
		}
	}
}
