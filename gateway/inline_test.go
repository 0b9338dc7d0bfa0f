package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newInlineForTest(t *testing.T, h http.HandlerFunc) (*inlineTransport, *httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return newInlineTransport(u.Host, nil, 4, http.DefaultTransport), srv, &conns
}

func get(t *testing.T, rt http.RoundTripper, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	return rt.RoundTrip(req)
}

func TestInlineTransportReusesConnections(t *testing.T) {
	rt, srv, conns := newInlineForTest(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	for i := 0; i < 5; i++ {
		resp, err := get(t, rt, context.Background(), srv.URL+"/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "hello" {
			t.Fatalf("body %q", b)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 sequential requests used %d connections, want 1", n)
	}
}

func TestInlineTransportAbandonedBodyClosesConnection(t *testing.T) {
	rt, srv, conns := newInlineForTest(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 1<<16)) })
	for i := 0; i < 2; i++ {
		resp, err := get(t, rt, context.Background(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		_, _ = resp.Body.Read(buf)
		resp.Body.Close() // unread data left: the connection must not be reused
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("abandoned bodies: %d connections, want 2", n)
	}
}

func TestInlineTransportRetriesStaleConnection(t *testing.T) {
	rt, srv, conns := newInlineForTest(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	resp, err := get(t, rt, context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.CloseClientConnections() // the pooled connection is now dead
	time.Sleep(20 * time.Millisecond)
	resp, err = get(t, rt, context.Background(), srv.URL)
	if err != nil {
		t.Fatalf("request after the upstream closed the idle connection: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" || conns.Load() != 2 {
		t.Errorf("body %q over %d connections, want ok over 2", b, conns.Load())
	}
}

func TestInlineTransportCancelInterruptsStream(t *testing.T) {
	rt, srv, _ := newInlineForTest(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := get(t, rt, ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first\n" {
		t.Fatalf("first event %q, %v", buf, err)
	}
	done := make(chan error, 1)
	go func() { _, err := resp.Body.Read(buf); done <- err }()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("read after cancel returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the request did not interrupt the blocked read")
	}
	resp.Body.Close()
}
