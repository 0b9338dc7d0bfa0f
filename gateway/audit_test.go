package gateway

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

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

	var events []auditEvent
	testwait.For(t, 5*time.Second, "three audit lines", func() (bool, string) {
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
		return len(events) == 3, "got:\n" + e.audit.String()
	})
	for _, ev := range events {
		if !ids[ev.RequestID] || ev.ClientRequestID != claimed {
			t.Errorf("audit requestID %q clientRequestID %q, want one of the gateway's IDs %v and %q", ev.RequestID, ev.ClientRequestID, ids, claimed)
		}
		delete(ids, ev.RequestID)
	}
}
