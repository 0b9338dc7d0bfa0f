package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
)

// bodyRecorder answers with the length of the body it read, and counts
// the requests it received.
func bodyRecorder(e *env) *atomic.Int64 {
	var got atomic.Int64
	e.up.handler = func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got.Add(1)
		fmt.Fprintf(w, "received %d bytes, Content-Length %d", len(b), r.ContentLength)
	}
	return &got
}

// onlyReader hides a reader's length, so that the client sends the body
// chunked (HTTP/1.1) or without a length (HTTP/2).
type onlyReader struct{ io.Reader }

// TestOversizedBodiesNeverReachTheUpstream sends bodies over the limit,
// with a Content-Length and without one: the answer is 413 and nothing of
// the request reaches the upstream. A body within the limit arrives whole.
func TestOversizedBodiesNeverReachTheUpstream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, proto string) {
		e := newEnv(t, envOptions{proto: proto, maxBodyBytes: 1024})
		received := bodyRecorder(e)
		alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
		c := e.client(alice)
		post := func(body io.Reader) (*http.Response, string) {
			t.Helper()
			req, _ := http.NewRequest("POST", e.gw.URL+"/api/v1/namespaces/default/configmaps", body)
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, string(b)
		}
		big := bytes.Repeat([]byte("x"), 4096)
		for name, body := range map[string]io.Reader{
			"with a length":    bytes.NewReader(big),
			"without a length": onlyReader{bytes.NewReader(big)},
		} {
			resp, b := post(body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(b, `"reason":"RequestEntityTooLarge"`) {
				t.Errorf("%s: status %d %s, want 413 RequestEntityTooLarge", name, resp.StatusCode, b)
			}
		}
		if n := e.up.count(); n != 0 {
			t.Errorf("the upstream received %d of the oversized requests, want none", n)
		}
		resp, b := post(onlyReader{bytes.NewReader(big[:1000])})
		if resp.StatusCode != http.StatusOK || b != "received 1000 bytes, Content-Length 1000" || received.Load() != 1 {
			t.Errorf("a body within the limit: status %d %q, want the whole body forwarded with its length", resp.StatusCode, b)
		}
	})
}

// TestSlowBodiesHoldNoUpstreamConnection trickles a request body. The
// upstream must see nothing until the body is complete, and a body that
// takes longer than the body timeout is answered 408 without the
// upstream ever seeing the request.
func TestSlowBodiesHoldNoUpstreamConnection(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, proto string) {
		e := newEnv(t, envOptions{proto: proto, bodyTimeout: time.Second})
		bodyRecorder(e)
		alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
		c := e.client(alice)
		trickle := func(n int, every time.Duration) (*http.Response, string, int64) {
			t.Helper()
			pr, pw := io.Pipe()
			var seenMidway atomic.Int64
			seenMidway.Store(-1)
			go func() {
				for i := 0; i < n; i++ {
					time.Sleep(every)
					if i == n/2 {
						seenMidway.Store(int64(e.up.count()))
					}
					if _, err := pw.Write([]byte("x")); err != nil {
						return
					}
				}
				pw.Close()
			}()
			req, _ := http.NewRequest("POST", e.gw.URL+"/api/v1/namespaces/default/configmaps", pr)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			pw.CloseWithError(io.ErrClosedPipe)
			return resp, string(b), seenMidway.Load()
		}
		resp, b, midway := trickle(20, 10*time.Millisecond)
		if resp.StatusCode != http.StatusOK || b != "received 20 bytes, Content-Length 20" {
			t.Errorf("a body trickled within the timeout: status %d %q, want it forwarded whole", resp.StatusCode, b)
		}
		if midway != 0 {
			t.Errorf("the upstream had received %d requests while the body was still arriving, want 0", midway)
		}
		before := e.up.count()
		resp, b, _ = trickle(40, 50*time.Millisecond)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(b, `"reason":"Timeout"`) {
			t.Errorf("a body slower than the timeout: status %d %s, want 408 Timeout", resp.StatusCode, b)
		}
		if n := e.up.count() - before; n != 0 {
			t.Errorf("the upstream received %d requests for the slow body, want none", n)
		}
	})
}

// TestUpgradeHeaderDoesNotLiftTheBodyLimit sends an oversized body on a
// request that names an Upgrade: the limit still holds, and nothing
// reaches the upstream.
func TestUpgradeHeaderDoesNotLiftTheBodyLimit(t *testing.T) {
	e := newEnv(t, envOptions{maxBodyBytes: 1024})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	conn, br := e.dialLean(t, alice)
	body := strings.Repeat("x", 4096)
	fmt.Fprintf(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, b := readResponse(t, br, "POST")
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d %s, want 413", resp.StatusCode, b)
	}
	if n := e.up.count(); n != 0 {
		t.Errorf("the upstream received %d requests, want none", n)
	}
}
