package h2

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// startServer serves h with a Server on a loopback listener, speaking
// HTTP/2 without TLS, and returns a client for it.
func startServer(t *testing.T, h http.Handler) *http.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{HTTP: &http.Server{Handler: h}}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.ServeConn(c, nil) }()
		}
	}()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(func() {
		// The client may still hold a connection it has not found idle
		// yet: Shutdown ends it with a GOAWAY.
		tr.CloseIdleConnections()
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		wg.Wait()
	})
	return &http.Client{Transport: rewrite{tr, ln.Addr().String()}, Timeout: 10 * time.Second}
}

// rewrite sends every request to addr.
type rewrite struct {
	rt   http.RoundTripper
	addr string
}

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = "http", r.addr
	return r.rt.RoundTrip(req)
}

func TestServerAnswersSmallAndLargeBodies(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB: several windows
	c := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			w.Header().Set("X-A", "1")
			io.WriteString(w, "hello")
		case "/big":
			w.Write(big)
		case "/echo":
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			fmt.Fprintf(w, "%s %d %d:", r.Proto, r.ContentLength, len(b))
			w.Write(b)
		}
	}))
	resp, err := c.Get("http://x/small")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello" || resp.Header.Get("X-A") != "1" || resp.ContentLength != 5 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Header.Get("Date") == "" {
		t.Fatalf("small: %q %v %d", b, resp.Header, resp.ContentLength)
	}
	resp, err = c.Get("http://x/big")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(b, big) {
		t.Fatalf("big: got %d bytes", len(b))
	}
	resp, err = c.Post("http://x/echo", "application/octet-stream", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf("HTTP/2.0 %d %d:", len(big), len(big))
	if !bytes.HasPrefix(b, []byte(want)) || !bytes.Equal(b[len(want):], big) {
		t.Fatalf("echo: got %q…, %d bytes", b[:min(len(b), 40)], len(b))
	}
}

func TestServerStreamsFlushesAndTrailers(t *testing.T) {
	next := make(chan struct{})
	c := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-next
		io.WriteString(w, "second\n")
		w.Header().Set("X-Sum", "2")
		w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
	}))
	resp, err := c.Get("http://x/watch")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d", resp.StatusCode)
	}
	line := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != "first\n" {
		t.Fatalf("first line %q, %v: the flush did not send it", line, err)
	}
	close(next)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "second\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if resp.Trailer.Get("X-Sum") != "2" || resp.Trailer.Get("X-Late") != "yes" {
		t.Fatalf("trailers %v", resp.Trailer)
	}
}

func TestServerManyConcurrentStreams(t *testing.T) {
	c := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond)
		io.WriteString(w, r.URL.Path)
	}))
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/%d", i)
			resp, err := c.Get("http://x" + path)
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != path {
				errs <- fmt.Errorf("%s: got %q", path, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestServerCancelsTheHandlerWhenTheClientResets(t *testing.T) {
	canceled := make(chan struct{})
	c := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(canceled)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://x/wait", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end after the client reset the stream")
	}
}

// A client that opens streams and resets them at once, as fast as it can
// (the "rapid reset" attack, CVE-2023-44487), gets no more handlers
// running at once than streams it may have open, and past four times as
// many waiting the connection ends with ENHANCE_YOUR_CALM, as with Go's
// server.
func TestServerBoundsHandlersUnderRapidReset(t *testing.T) {
	var running, most atomic.Int32
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &Server{HTTP: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release // a handler that does not watch its context
		running.Add(-1)
	})}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.ServeConn(c, nil)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "x"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	go func() {
		for id := uint32(1); id < 2*3000; id += 2 {
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}) != nil ||
				fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
				return
			}
		}
	}()
	var goAway *http2.GoAwayFrame
	for goAway == nil {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("the connection ended without a GOAWAY: %v", err)
		}
		goAway, _ = f.(*http2.GoAwayFrame)
	}
	if goAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", goAway.ErrCode)
	}
	if m := most.Load(); m > maxStreams {
		t.Errorf("%d handlers ran at once, want at most %d", m, maxStreams)
	}
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeConn did not return after the handlers did")
	}
}
