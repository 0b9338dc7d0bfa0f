package gateway

import (
	"bufio"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

func TestClientRequestIDIsNotTheAuditID(t *testing.T) {
	forEachProtocol(t, testClientRequestIDIsNotTheAuditID)
}

// testClientRequestIDIsNotTheAuditID sends requests that all claim one
// X-Request-Id, as a client trying to pass for another request would, and
// checks that each gets the gateway's own ID everywhere, the claim being
// recorded apart.
func testClientRequestIDIsNotTheAuditID(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	const claimed = "victim-request-1"
	h := http.Header{"X-Request-Id": {claimed}}

	ids := map[string]bool{}
	for i, c := range []*http.Client{e.client(alice), e.client(alice), e.client(nil)} {
		resp, body := e.do(t, c, "GET", "/api/v1/pods", h)
		id := resp.Header.Get("X-Request-Id")
		if id == "" || id == claimed || ids[id] {
			t.Fatalf("request %d: X-Request-Id %q in the response, want a new ID of the gateway's own (status %d %s)", i, id, resp.StatusCode, body)
		}
		ids[id] = true
		if resp.StatusCode == http.StatusOK {
			if got := e.up.last(t).header.Values("X-Request-Id"); len(got) != 1 || got[0] != id {
				t.Errorf("request %d: upstream saw X-Request-Id %q, want [%s]", i, got, id)
			}
		}
	}

	events := e.auditEvents(t, 3)
	for _, ev := range events {
		if !ids[ev.RequestID] || ev.ClientRequestID != claimed {
			t.Errorf("audit requestID %q clientRequestID %q, want one of the gateway's IDs %v and %q", ev.RequestID, ev.ClientRequestID, ids, claimed)
		}
		delete(ids, ev.RequestID)
	}
}

func TestAuditLineNamesTheCertificateSerial(t *testing.T) {
	forEachProtocol(t, testAuditLineNamesTheCertificateSerial)
}

// testAuditLineNamesTheCertificateSerial: the audit line of a request
// authenticated by a client certificate holds that certificate's serial,
// as openssl x509 -serial prints it, beside its SHA-256 credential ID; a
// token's line holds none.
func testAuditLineNamesTheCertificateSerial(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	e.do(t, e.client(alice), "GET", "/api/v1/pods", nil)
	e.do(t, e.client(nil), "GET", "/api/v1/pods", http.Header{"Authorization": {"Bearer token-alice"}})

	events := e.auditEvents(t, 2)
	// The lines may come in either order: find the certificate's.
	if events[0].Authenticator != "x509" {
		events[0], events[1] = events[1], events[0]
	}
	want := ca.SerialHex(alice.Cert)
	if ev := events[0]; ev.User != "alice" || ev.Authenticator != "x509" || ev.CertSerial != want || !strings.HasPrefix(ev.CredentialID, "X509SHA256=") {
		t.Errorf("the certificate's audit line: %+v, want alice by x509 with serial %s", ev, want)
	}
	if ev := events[1]; ev.User != "alice" || ev.Authenticator == "x509" || ev.CertSerial != "" {
		t.Errorf("the token's audit line: %+v, want alice by token and no serial", ev)
	}
}

// TestSerialHexIsOpenSSLs: two digits per byte, upper case, as openssl
// x509 -serial prints a serial (a leading zero kept, zero as "00").
func TestSerialHexIsOpenSSLs(t *testing.T) {
	for serial, want := range map[int64]string{0: "00", 0xabc: "0ABC", 0x1234: "1234", 0x0f00000001: "0F00000001", -0xabc: "-0ABC"} {
		if got := ca.SerialHex(&x509.Certificate{SerialNumber: big.NewInt(serial)}); got != want {
			t.Errorf("serial %#x: %q, want %q", serial, got, want)
		}
	}
}

// auditEvents waits until the gateway's audit log holds n lines and
// returns them.
func (e *env) auditEvents(t *testing.T, n int) []auditEvent {
	t.Helper()
	var events []auditEvent
	testwait.For(t, 5*time.Second, fmt.Sprintf("%d audit lines", n), func() (bool, string) {
		if err := e.gateway.Flush(); err != nil {
			t.Fatal(err)
		}
		events = events[:0]
		sc := bufio.NewScanner(strings.NewReader(e.audit.String()))
		for sc.Scan() {
			var ev auditEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("audit line %q: %v", sc.Text(), err)
			}
			events = append(events, ev)
		}
		return len(events) == n, "got:\n" + e.audit.String()
	})
	return events
}
