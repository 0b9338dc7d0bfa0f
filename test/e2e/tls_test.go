package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUpTLSCipherSuites checks with openssl that `kubegate up` refuses a
// TLS 1.2 client offering only a CBC suite with a SHA-1 MAC, and accepts
// it once --tls-cipher-suites names that suite.
func TestUpTLSCipherSuites(t *testing.T) {
	openssl := requireTool(t, "openssl")
	dir := filepath.Join(t.TempDir(), "cluster")
	sClient := func(c *upCluster, cipher string) result {
		return runCmd(t, []byte{}, openssl, "s_client", "-connect", "127.0.0.1:"+strconv.Itoa(c.port),
			"-tls1_2", "-cipher", cipher, "-CAfile", filepath.Join(dir, "pki", "ca.crt"))
	}

	c := startUp(t, dir, 0)
	if res := sClient(c, "ECDHE-ECDSA-AES128-SHA"); res.code == 0 {
		t.Errorf("default: openssl -tls1_2 -cipher ECDHE-ECDSA-AES128-SHA connected, want the handshake refused:\n%s", res.stdout)
	}
	if res := sClient(c, "ECDHE-ECDSA-AES128-GCM-SHA256"); res.code != 0 || !strings.Contains(res.stdout, "ECDHE-ECDSA-AES128-GCM-SHA256") {
		t.Errorf("default: openssl -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	c.stop(t)

	c = startUp(t, dir, 0, "--tls-cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
	if res := sClient(c, "ECDHE-ECDSA-AES128-SHA"); res.code != 0 || !strings.Contains(res.stdout, "ECDHE-ECDSA-AES128-SHA") {
		t.Errorf("--tls-cipher-suites naming it: openssl -cipher ECDHE-ECDSA-AES128-SHA: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	c.stop(t)
}
