package h2

// Hostile-client tests: raw-frame clients over net.Pipe, so that the test
// decides exactly when the server's writes can drain.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rvServe serves one connection; a test may point it at another server
// to check a script against it.
var rvServe = func(s *Server, c net.Conn) { s.ServeConn(c, nil) }

// rvBlockedWrite is what the stack of a handler shows while its DATA
// waits for the write queue to drain.
var rvBlockedWrite = []string{"(*stream).writeData", "(*conn).write", "sync.(*Cond).Wait"}

// rvClient is a raw HTTP/2 client on one end of a net.Pipe whose other
// end a Server serves.
type rvClient struct {
	t      *testing.T
	nc     net.Conn
	wmu    sync.Mutex
	fr     *http2.Framer
	ebuf   bytes.Buffer
	enc    *hpack.Encoder
	served chan struct{} // closed when ServeConn returns
	s      *Server
}

func newRVClient(t *testing.T, srv *http.Server, settings ...http2.Setting) *rvClient {
	t.Helper()
	cn, sn := net.Pipe()
	c := &rvClient{t: t, nc: cn, served: make(chan struct{}), s: &Server{HTTP: srv}}
	c.fr = http2.NewFramer(cn, cn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.SetMaxReadFrameSize(1 << 20)
	c.enc = hpack.NewEncoder(&c.ebuf)
	go func() { defer close(c.served); rvServe(c.s, sn) }()
	t.Cleanup(func() {
		cn.Close()
		select {
		case <-c.served:
		case <-time.After(5 * time.Second):
			t.Error("ServeConn did not return after the client closed the connection")
		}
	})
	c.write(func() error {
		if _, err := cn.Write([]byte(http2.ClientPreface)); err != nil {
			return err
		}
		return c.fr.WriteSettings(settings...)
	})
	return c
}

func (c *rvClient) write(fn func() error) {
	c.t.Helper()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := fn(); err != nil {
		c.t.Fatalf("client write: %v", err)
	}
}

func (c *rvClient) get(id uint32, path string, extra ...string) {
	c.t.Helper()
	c.write(func() error {
		c.ebuf.Reset()
		kv := append([]string{":method", "GET", ":scheme", "https", ":authority", "x", ":path", path}, extra...)
		for i := 0; i < len(kv); i += 2 {
			c.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.ebuf.Bytes(), EndStream: true, EndHeaders: true})
	})
}

// waitForStack waits until some goroutine's stack holds every one of
// parts.
func waitForStack(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	buf := make([]byte, 1<<20)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
	next:
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			for _, p := range parts {
				if !strings.Contains(g, p) {
					continue next
				}
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no goroutine reached %q", parts)
}

// readLoop reads frames into a channel until the connection fails; the
// error ends the channel.
func (c *rvClient) readLoop() (<-chan http2.Frame, *error) {
	ch := make(chan http2.Frame, 1024)
	var rerr error
	go func() {
		defer close(ch)
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				rerr = err
				return
			}
			if d, ok := f.(*http2.DataFrame); ok {
				// The Framer reuses its buffer: keep a copy.
				cp := *d
				f = &copiedData{cp, bytes.Clone(d.Data())}
			}
			ch <- f
		}
	}()
	return ch, &rerr
}

type copiedData struct {
	http2.DataFrame
	data []byte
}

// TestHostileHPACKStaysInStepWhenHeadersAreSkipped: a handler that writes
// its answer's header after the client reset the stream must not leave
// the server's HPACK encoder with entries the client never saw. Go's
// server encodes a header block only when it writes it.
func TestHostileHPACKStaysInStepWhenHeadersAreSkipped(t *testing.T) {
	flushed := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a":
			<-r.Context().Done() // the client reset the stream
			w.Header().Set("X-Leak", "from-stream-1")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			close(flushed)
		case "/b":
			w.Header().Set("X-Leak", "from-stream-1")
			w.Header().Set("X-B", "b")
			io.WriteString(w, "ok")
		}
	})}
	c := newRVClient(t, srv)
	frames, rerr := c.readLoop()
	c.get(1, "/a")
	c.write(func() error { return c.fr.WriteRSTStream(1, http2.ErrCodeCancel) })
	select {
	case <-flushed:
	case <-time.After(5 * time.Second):
		t.Fatal("handler /a did not flush")
	}
	c.get(3, "/b")
	timeout := time.After(5 * time.Second)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("connection failed before stream 3's header: %v (the client's HPACK decoder is out of step with the server's encoder)", *rerr)
			}
			mh, ok := f.(*http2.MetaHeadersFrame)
			if !ok || mh.StreamID != 3 {
				continue
			}
			if mh.PseudoValue("status") != "200" || len(mh.RegularFields()) == 0 {
				t.Fatalf("stream 3 header: %v", mh.Fields)
			}
			for _, hf := range mh.RegularFields() {
				if hf.Name == "x-b" && hf.Value == "b" {
					return
				}
			}
			t.Fatalf("stream 3 header lacks x-b: %v", mh.Fields)
		case <-timeout:
			t.Fatal("no header for stream 3")
		}
	}
}

// TestHostileResetDoesNotLeakConnectionWindow: DATA a handler reserved
// window for but did not write, because the client reset the stream
// while the write waited for the queue to drain, must give the window
// back. Otherwise each such reset shrinks the connection's send window
// for good, until every answer on the connection stalls. Go's server
// takes the window only when it writes the frame.
func TestHostileResetDoesNotLeakConnectionWindow(t *testing.T) {
	const connWindow = 65535 + 1<<20
	bigDone := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			defer close(bigDone)
			w.Write(make([]byte, 1<<20))
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/n/"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write(make([]byte, n))
	})}
	c := newRVClient(t, srv, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	c.write(func() error { return c.fr.WriteWindowUpdate(0, connWindow-65535) })
	c.get(1, "/big")
	// The queue is full and the handler waits in write with a frame's
	// window reserved; the client has read nothing.
	waitForStack(t, rvBlockedWrite...)
	c.write(func() error { return c.fr.WriteRSTStream(1, http2.ErrCodeCancel) })
	frames, rerr := c.readLoop()
	select {
	case <-bigDone:
	case <-time.After(5 * time.Second):
		t.Fatal("handler /big did not return")
	}
	c.write(func() error { return c.fr.WritePing(false, [8]byte{1}) })
	got := 0
	timeout := time.After(5 * time.Second)
sync:
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("connection failed: %v", *rerr)
			}
			switch f := f.(type) {
			case *copiedData:
				got += len(f.data)
			case *http2.PingFrame:
				if f.IsAck() && f.Data == [8]byte{1} {
					break sync
				}
			}
		case <-timeout:
			t.Fatal("no PING ACK")
		}
	}
	// The client granted connWindow and received got: it may receive
	// exactly the rest.
	want := connWindow - got
	c.get(3, "/n/"+strconv.Itoa(want))
	recv := 0
	timeout = time.After(3 * time.Second)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("connection failed: %v", *rerr)
			}
			if d, ok := f.(*copiedData); ok && d.StreamID == 3 {
				recv += len(d.data)
				if d.StreamEnded() {
					if recv != want {
						t.Fatalf("stream 3: %d bytes, want %d", recv, want)
					}
					return
				}
			}
		case <-timeout:
			t.Fatalf("stream 3 stalled after %d of %d bytes: the reset stream's reserved window (%d bytes) was lost", recv, want, want-recv)
		}
	}
}

// TestHostileShutdownHonoursContextWithStalledClient: Shutdown(ctx) must
// return once ctx is done even when a client has stopped reading and the
// write queue is full, as http.Server.Shutdown does.
func TestHostileShutdownHonoursContextWithStalledClient(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 1<<20))
	})}
	c := newRVClient(t, srv, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	c.write(func() error { return c.fr.WriteWindowUpdate(0, 1<<30) })
	c.get(1, "/")
	waitForStack(t, rvBlockedWrite...)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.s.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown: %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Shutdown(ctx) still blocked 3s after ctx expired: it writes the GOAWAY synchronously into a full queue")
	}
}

// TestHostileControlFrameFloodWithoutReadingEndsConnection: a client that
// sends PINGs and never reads must not pin the connection for ever. Go's
// server closes it once 10000 control frames wait to be written; so
// does ours (maxQueuedControl), whose read goroutine never waits for the
// write queue.
func TestHostileControlFrameFloodWithoutReadingEndsConnection(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a slow handler, e.g. waiting on an upstream
		case <-release:
		case <-r.Context().Done():
		}
	})}
	c := newRVClient(t, srv)
	c.get(1, "/")
	go func() {
		for i := 0; i < 30000; i++ {
			c.wmu.Lock()
			c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			err := c.fr.WritePing(false, [8]byte{byte(i)})
			c.wmu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-c.served:
	case <-time.After(5 * time.Second):
		t.Fatal("connection still served 5s into a PING flood (30000 PINGs) from a client that does not read")
	}
}

// TestHostileInitialWindowSizeOverflowIsFlowControlError: a SETTINGS
// INITIAL_WINDOW_SIZE that grows an open stream's window past 2^31-1 is a
// connection error FLOW_CONTROL_ERROR (RFC 9113 6.9.2). Go's server
// (1.27) notices it lazily, at the stream's next WINDOW_UPDATE or write,
// and then sends GOAWAY FLOW_CONTROL_ERROR; so does ours.
func TestHostileInitialWindowSizeOverflowIsFlowControlError(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})}
	c := newRVClient(t, srv)
	frames, rerr := c.readLoop()
	c.get(1, "/")
	c.write(func() error { return c.fr.WriteWindowUpdate(1, 1<<31-1-65535) })
	c.write(func() error {
		return c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65536})
	})
	c.write(func() error { return c.fr.WriteWindowUpdate(1, 1) })
	timeout := time.After(3 * time.Second)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("connection ended without GOAWAY: %v", *rerr)
			}
			if rs, ok := f.(*http2.RSTStreamFrame); ok {
				t.Fatalf("RST_STREAM %v on stream %d, want GOAWAY FLOW_CONTROL_ERROR", rs.ErrCode, rs.StreamID)
			}
			if ga, ok := f.(*http2.GoAwayFrame); ok {
				if ga.ErrCode != http2.ErrCodeFlowControl {
					t.Fatalf("GOAWAY %v, want FLOW_CONTROL_ERROR", ga.ErrCode)
				}
				return
			}
		case <-timeout:
			t.Fatal("no GOAWAY FLOW_CONTROL_ERROR: the stream's send window now exceeds 2^31-1")
		}
	}
}
