package h2

import (
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"testing"
)

// The hostile scripts, run against net/http's own HTTP/2 server: they
// pass there, so a failure against ours is a difference from Go's
// server, not a mistake in the script.
func TestHostileScriptsPassAgainstGoServer(t *testing.T) {
	oldServe, oldBlocked := rvServe, rvBlockedWrite
	defer func() { rvServe, rvBlockedWrite = oldServe, oldBlocked }()
	rvBlockedWrite = []string{"writeDataFromHandler"}
	rvServe = func(s *Server, c net.Conn) {
		// net/http's own server, speaking HTTP/2 with prior knowledge
		// on this one connection until it closes.
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		closed := make(chan struct{})
		var once sync.Once
		ref := &http.Server{Handler: s.HTTP.Handler, Protocols: &p, ErrorLog: log.New(io.Discard, "", 0),
			ConnState: func(_ net.Conn, st http.ConnState) {
				if st == http.StateClosed || st == http.StateHijacked {
					once.Do(func() { close(closed) })
				}
			}}
		ln := &oneConnListener{c: c, done: make(chan struct{})}
		go ref.Serve(ln)
		<-closed
		ref.Close()
	}
	t.Run("hpack", TestHostileHPACKStaysInStepWhenHeadersAreSkipped)
	t.Run("window", TestHostileResetDoesNotLeakConnectionWindow)
	t.Run("flood", TestHostileControlFrameFloodWithoutReadingEndsConnection)
	t.Run("overflow", TestHostileInitialWindowSizeOverflowIsFlowControlError)
}

// oneConnListener accepts c once, then waits until it is closed.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }
