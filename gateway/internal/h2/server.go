// Package h2 serves the gateway's HTTP/2 connections when it is asked to
// (kubegate gateway --http2-fast-path); by default Go's own HTTP/2 server
// serves them, since only that one gets Go's HTTP/2 fixes. It frames with
// golang.org/x/net/http2's Framer and hpack, and gives every stream to an
// http.Handler as an http.Request with an http.ResponseWriter, as Go's
// own HTTP/2 server does. It knows nothing of identities.
//
// Go's server checks things this one does not: it ends an HTTP/2
// connection whose TLS 1.2 cipher suite RFC 9113 section 9.2.2 prohibits
// with INADEQUATE_SECURITY, and it takes its settings from the
// http.Server's HTTP2 field.
//
// It differs from Go's server in how it is built, not in what a client
// sees: one goroutine per connection reads frames and answers the
// connection's control frames; each stream's handler runs in a goroutine
// of its own and writes its answer's frames itself, under the
// connection's write lock, and the last writer to leave flushes. Go's
// server instead passes every frame through the connection's serving
// goroutine and a write scheduler, and flushes from yet another
// goroutine; that is most of what a small answer costs.
//
// The gateway's differential tests hold it to Go's server: the same
// client frames must give the same answers, stream resets and
// connection errors.
package h2

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The protocol's constants, and the limits Go's HTTP/2 server applies
// when its http.Server does not set them.
const (
	preface = http2.ClientPreface

	defaultWindow      = 65535 // the initial window, before SETTINGS
	maxWindow          = 1<<31 - 1
	defaultFrameSize   = 16384   // the initial SETTINGS_MAX_FRAME_SIZE
	readFrameSize      = 1 << 20 // the largest frame we accept
	maxStreams         = 250     // SETTINGS_MAX_CONCURRENT_STREAMS
	streamRecvWindow   = 1 << 20 // SETTINGS_INITIAL_WINDOW_SIZE we announce
	connRecvWindow     = 1 << 20 // the connection's receive window
	headerTableSize    = 4096
	answerBuffer       = 4 << 10 // body bytes a handler's answer buffers
	firstSettingsDelay = 2 * time.Second
	goAwayDelay        = time.Second
)

// Server serves HTTP/2 connections whose TLS handshake chose "h2".
type Server struct {
	// HTTP is the server whose Handler serves every stream. Its
	// MaxHeaderBytes, IdleTimeout and ErrorLog apply as they do to Go's
	// HTTP/2 server. Required.
	HTTP *http.Server
	// Logger logs connection errors; nil means slog.Default().
	Logger *slog.Logger

	mu       sync.Mutex
	conns    map[*conn]struct{}
	shutdown bool
	gone     sync.Cond // signalled when a connection ends
}

// Shutdown tells every connection's client, with a GOAWAY, that no new
// streams are taken, and waits until their streams are done and the
// connections closed, or ctx is done; then it closes what is left.
// Connections served after it are closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.startGoAway()
	}
	done := make(chan struct{})
	go func() {
		s.mu.Lock()
		for len(s.conns) > 0 {
			s.gone.Wait()
		}
		s.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, c := range conns {
			c.nc.Close()
		}
		return ctx.Err()
	}
}

// track adds c to the served connections, or removes it; false if the
// server is shutting down.
func (s *Server) track(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
		s.gone.L = &s.mu
	}
	if !add {
		delete(s.conns, c)
		s.gone.Broadcast()
		return true
	}
	if s.shutdown {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

// ServeConn serves c, over which a client speaks HTTP/2, until the
// connection ends; state is the connection's TLS state, given to every
// request (nil for none).
func (s *Server) ServeConn(c net.Conn, state *tls.ConnectionState) {
	base := context.Background()
	if s.HTTP.BaseContext != nil {
		base = s.HTTP.BaseContext(fakeListener{c})
	}
	ctx, cancel := context.WithCancel(base)
	if s.HTTP.ConnContext != nil {
		ctx = s.HTTP.ConnContext(ctx, c)
	}
	ctx = context.WithValue(ctx, http.ServerContextKey, s.HTTP)
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, c.LocalAddr())
	cc := &conn{
		s: s, nc: c, state: state, remote: c.RemoteAddr().String(),
		ctx: ctx, cancel: cancel,
		log:               cmp.Or(s.Logger, slog.Default()),
		streams:           map[uint32]*stream{},
		sendWindow:        defaultWindow,
		initialSendWindow: defaultWindow,
		peerFrameSize:     defaultFrameSize,
		recvWindow:        connRecvWindow,
		maxHeaderList:     maxHeaderListSize(s.HTTP),
		idle:              s.HTTP.IdleTimeout,
	}
	cc.cond.L = &cc.mu
	cc.out, cc.spare = new(bytes.Buffer), new(bytes.Buffer)
	cc.drained.L = &cc.wmu
	cc.kick = make(chan struct{}, 1)
	cc.sendDone = make(chan struct{})
	cc.wfr = http2.NewFramer(queue{cc}, nil)
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	if !s.track(cc, true) {
		c.Close()
		cancel()
		return
	}
	defer s.track(cc, false)
	go cc.send()
	cc.serve()
}

// maxHeaderListSize is the SETTINGS_MAX_HEADER_LIST_SIZE Go's server
// announces: the http.Server's header limit plus room for ten fields'
// overhead.
func maxHeaderListSize(s *http.Server) uint32 {
	n := s.MaxHeaderBytes
	if n <= 0 {
		n = http.DefaultMaxHeaderBytes
	}
	return uint32(n + 10*32)
}

// conn is one HTTP/2 connection.
type conn struct {
	s      *Server
	nc     net.Conn
	state  *tls.ConnectionState
	remote string
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger

	// The write side. Frames are written under wmu into out, which the
	// sending goroutine (send) writes to the connection, one buffer at a
	// time: frames that come while it writes go out together next, in
	// one TLS record and one system call. Writers wait while out holds
	// maxQueued bytes.
	wmu           sync.Mutex
	out           *bytes.Buffer
	spare         *bytes.Buffer // nil while send writes it
	drained       sync.Cond     // on wmu: out was taken
	kick          chan struct{} // wakes send
	closing       bool          // send stops once out is empty
	queuedControl int           // control frames in out
	sendDone      chan struct{}
	wfr           *http2.Framer
	henc          *hpack.Encoder
	hbuf          bytes.Buffer
	werr          error

	// Under mu: the streams, the send windows and the connection's fate.
	// cond wakes writers waiting for a window and goroutines waiting for
	// the last stream to end.
	mu                sync.Mutex
	cond              sync.Cond
	streams           map[uint32]*stream
	sendWindow        int64
	initialSendWindow int64
	peerFrameSize     uint32
	peerHeaderList    uint32 // 0: no limit announced
	flowErr           bool   // a window went over 2^31-1: nothing more is sent
	handlers          int    // handlers running
	queued            []pendingHandler
	closed            bool
	goingAway         bool

	// Under mu too: the connection's receive window left, and what the
	// handlers have consumed of it but the client has not been given.
	recvWindow int32
	recvUnsent int32

	// The read goroutine's own.
	fr              *http2.Framer
	frames          *frameTracker
	maxStreamID     atomic.Uint32 // the highest stream ID the client opened
	sawSettings     bool
	unackedSettings int
	maxHeaderList   uint32
	idle            time.Duration
	idleTimer       *time.Timer
}

// connError ends the connection with a GOAWAY carrying code.
type connError http2.ErrCode

func (e connError) Error() string { return "h2: connection error " + http2.ErrCode(e).String() }

// streamError resets one stream with code.
type streamError struct {
	id   uint32
	code http2.ErrCode
}

func (e streamError) Error() string { return "h2: stream error " + e.code.String() }

func (c *conn) serve() {
	defer c.close()
	c.writeControl(func() error {
		err := c.wfr.WriteSettings(
			http2.Setting{ID: http2.SettingMaxFrameSize, Val: readFrameSize},
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: maxStreams},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.maxHeaderList},
			http2.Setting{ID: http2.SettingHeaderTableSize, Val: headerTableSize},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamRecvWindow},
			http2.Setting{ID: http2.SettingNoRFC7540Priorities, Val: 1},
		)
		if err == nil {
			err = c.wfr.WriteWindowUpdate(0, connRecvWindow-defaultWindow)
		}
		return err
	})
	c.unackedSettings++

	timeout := cmp.Or(c.s.HTTP.ReadHeaderTimeout, c.s.HTTP.ReadTimeout, 10*time.Second)
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, len(preface))
	if _, err := io.ReadFull(c.nc, buf); err != nil || string(buf) != preface {
		return
	}
	// The client's SETTINGS must follow its preface promptly.
	_ = c.nc.SetReadDeadline(time.Now().Add(firstSettingsDelay))

	c.frames = &frameTracker{r: bufio.NewReaderSize(c.nc, 4<<10)}
	c.fr = http2.NewFramer(nil, c.frames)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(headerTableSize, nil)
	c.fr.MaxHeaderListSize = c.maxHeaderList
	c.fr.SetMaxReadFrameSize(readFrameSize)
	if c.idle > 0 {
		c.idleTimer = time.AfterFunc(c.idle, c.onIdle)
		defer c.idleTimer.Stop()
	}
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			var ce http2.ConnectionError
			switch {
			case errors.As(err, &se):
				// A malformed header block: the stream is reset, the
				// connection goes on.
				if err := c.handle(streamError{se.StreamID, se.Code}); err != nil {
					return
				}
				continue
			case errors.As(err, &ce):
				if c.frames.typ == http2.FrameHeaders {
					// A header block that cannot be read: the GOAWAY
					// names its stream, as Go's server's does.
					c.noteStream(c.frames.streamID)
				}
				c.sendGoAway(http2.ErrCode(ce))
			case errors.Is(err, http2.ErrFrameTooLarge):
				c.sendGoAway(http2.ErrCodeFrameSize)
			}
			return
		}
		if !c.sawSettings {
			if _, ok := f.(*http2.SettingsFrame); !ok {
				c.noteStream(f.Header().StreamID)
				c.sendGoAway(http2.ErrCodeProtocol)
				return
			}
			c.sawSettings = true
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		err = c.processFrame(f)
		if _, ok := err.(connError); ok {
			c.noteStream(f.Header().StreamID)
		}
		if err := c.handle(err); err != nil {
			return
		}
	}
}

// handle acts on what processing a frame gave: nothing, a stream reset,
// or the end of the connection, which it reports.
func (c *conn) handle(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case streamError:
		c.resetStream(e.id, e.code)
		return nil
	case connError:
		c.sendGoAway(http2.ErrCode(e))
		return err
	default:
		return err
	}
}

// processFrame acts on one frame from the client.
func (c *conn) processFrame(f http2.Frame) error {
	c.mu.Lock()
	gone := c.goingAway
	c.mu.Unlock()
	if gone && f.Header().StreamID > c.maxStreamID.Load() {
		// After a GOAWAY, frames for new streams are ignored, but the
		// connection's window is still returned.
		if d, ok := f.(*http2.DataFrame); ok {
			return c.discardData(d)
		}
		return nil
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		return c.processSettings(f)
	case *http2.MetaHeadersFrame:
		return c.processHeaders(f)
	case *http2.DataFrame:
		return c.processData(f)
	case *http2.WindowUpdateFrame:
		return c.processWindowUpdate(f)
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		if f.StreamID != 0 {
			return connError(http2.ErrCodeProtocol)
		}
		return c.writeControl(func() error { return c.wfr.WritePing(true, f.Data) })
	case *http2.RSTStreamFrame:
		if c.idleStream(f.StreamID) {
			return connError(http2.ErrCodeProtocol)
		}
		c.mu.Lock()
		st := c.streams[f.StreamID]
		c.mu.Unlock()
		if st != nil {
			c.closeStream(st, errClientReset)
		}
		return nil
	case *http2.PriorityFrame:
		if f.StreamID == f.StreamDep {
			return streamError{f.StreamID, http2.ErrCodeProtocol}
		}
		return nil
	case *http2.GoAwayFrame:
		c.startGoAway()
		return nil
	case *http2.PushPromiseFrame:
		return connError(http2.ErrCodeProtocol)
	default:
		return nil // unknown frame types are ignored
	}
}

// idleStream reports whether id names a stream the client has not opened.
func (c *conn) idleStream(id uint32) bool {
	return id == 0 || id > c.maxStreamID.Load()
}

func (c *conn) processSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		c.unackedSettings--
		if c.unackedSettings < 0 {
			return connError(http2.ErrCodeProtocol)
		}
		return nil
	}
	if f.NumSettings() > 100 || f.HasDuplicates() {
		return connError(http2.ErrCodeProtocol)
	}
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		switch s.ID {
		case http2.SettingHeaderTableSize:
			c.wmu.Lock()
			c.henc.SetMaxDynamicTableSize(s.Val)
			c.wmu.Unlock()
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.initialSendWindow
			for _, st := range c.streams {
				st.sendWindow += delta
			}
			c.initialSendWindow = int64(s.Val)
			c.cond.Broadcast()
		case http2.SettingMaxFrameSize:
			c.peerFrameSize = s.Val
		case http2.SettingMaxHeaderListSize:
			c.peerHeaderList = s.Val
		case http2.SettingNoRFC7540Priorities:
			if s.Val > 1 {
				return connError(http2.ErrCodeProtocol)
			}
		}
		return nil
	})
	if err != nil {
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			return connError(ce)
		}
		return err
	}
	return c.writeControl(func() error { return c.wfr.WriteSettingsAck() })
}

func (c *conn) processWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.StreamID == 0 {
		if c.sendWindow+int64(f.Increment) > maxWindow {
			return connError(http2.ErrCodeFlowControl)
		}
		c.sendWindow += int64(f.Increment)
		c.cond.Broadcast()
		return nil
	}
	if c.idleStream(f.StreamID) {
		return connError(http2.ErrCodeProtocol)
	}
	st := c.streams[f.StreamID]
	if st == nil {
		return nil // a stream closed since: not an error
	}
	if st.sendWindow > maxWindow {
		// SETTINGS_INITIAL_WINDOW_SIZE pushed this window over the
		// limit earlier: a connection error, found now.
		c.flowErr = true
		return connError(http2.ErrCodeFlowControl)
	}
	if st.sendWindow+int64(f.Increment) > maxWindow {
		return streamError{f.StreamID, http2.ErrCodeFlowControl}
	}
	st.sendWindow += int64(f.Increment)
	c.cond.Broadcast()
	return nil
}

// discardData returns the window a DATA frame took on the connection
// and drops it.
func (c *conn) discardData(f *http2.DataFrame) error {
	c.mu.Lock()
	ok := int32(f.Length) <= c.recvWindow
	if ok {
		c.recvWindow -= int32(f.Length)
	}
	c.mu.Unlock()
	if !ok {
		return streamError{f.StreamID, http2.ErrCodeFlowControl}
	}
	c.returnWindow(nil, int32(f.Length))
	return nil
}

// returnWindow gives n consumed bytes of the connection's receive
// window, and of st's unless st is nil, back to the client, in
// WINDOW_UPDATEs of at least a quarter of the window.
func (c *conn) returnWindow(st *stream, n int32) {
	if n <= 0 {
		return
	}
	var connInc, streamInc int32
	c.mu.Lock()
	c.recvUnsent += n
	if c.recvUnsent >= connRecvWindow/4 || c.recvWindow < connRecvWindow/4 {
		connInc, c.recvUnsent = c.recvUnsent, 0
		c.recvWindow += connInc
	}
	if st != nil && !st.closed && !st.halfClosed {
		st.recvUnsent += n
		if st.recvUnsent >= streamRecvWindow/4 || st.recvWindow < streamRecvWindow/4 {
			streamInc, st.recvUnsent = st.recvUnsent, 0
			st.recvWindow += streamInc
		}
	}
	c.mu.Unlock()
	if connInc > 0 || streamInc > 0 {
		c.writeControl(func() error {
			if connInc > 0 {
				if err := c.wfr.WriteWindowUpdate(0, uint32(connInc)); err != nil {
					return err
				}
			}
			if streamInc > 0 {
				return c.wfr.WriteWindowUpdate(st.id, uint32(streamInc))
			}
			return nil
		})
	}
}

func (c *conn) processData(f *http2.DataFrame) error {
	id := f.StreamID
	if c.idleStream(id) {
		return connError(http2.ErrCodeProtocol)
	}
	c.mu.Lock()
	st := c.streams[id]
	c.mu.Unlock()
	if st == nil || st.remoteClosed() {
		if err := c.discardData(f); err != nil {
			return err
		}
		return streamError{id, http2.ErrCodeStreamClosed}
	}
	b := st.body
	data := f.Data()
	if b.declared >= 0 && b.received+int64(len(data)) > b.declared {
		if err := c.discardData(f); err != nil {
			return err
		}
		b.closeWithError(errTooMuchBody)
		return streamError{id, http2.ErrCodeProtocol}
	}
	c.mu.Lock()
	ok := int32(f.Length) <= c.recvWindow && int32(f.Length) <= st.recvWindow
	if ok {
		c.recvWindow -= int32(f.Length)
		st.recvWindow -= int32(f.Length)
	}
	c.mu.Unlock()
	if !ok {
		return streamError{id, http2.ErrCodeFlowControl}
	}
	b.received += int64(len(data))
	if !b.write(data) {
		// The handler is done with the body: the bytes are dropped and
		// the connection's window returned at once.
		c.returnWindow(nil, int32(len(data)))
	}
	// Padding is returned at once.
	c.returnWindow(st, int32(f.Length)-int32(len(data)))
	if f.StreamEnded() {
		c.endRemote(st)
	}
	return nil
}

// endRemote ends the client's half of st.
func (c *conn) endRemote(st *stream) {
	b := st.body
	if b.declared >= 0 && b.declared != b.received {
		b.closeWithError(errShortBody)
	} else {
		b.closeWithError(io.EOF)
	}
	c.mu.Lock()
	st.halfClosed = true
	c.mu.Unlock()
}

// resetStream sends RST_STREAM for id and forgets the stream.
func (c *conn) resetStream(id uint32, code http2.ErrCode) {
	c.mu.Lock()
	st := c.streams[id]
	c.mu.Unlock()
	if st != nil {
		c.closeStream(st, errServerReset)
	}
	c.writeControl(func() error { return c.wfr.WriteRSTStream(id, code) })
}

// resetStreamFor resets st, if it is still open, with code; its
// handler's writes then fail with cause.
func (c *conn) resetStreamFor(st *stream, code http2.ErrCode, cause error) {
	c.mu.Lock()
	open := c.streams[st.id] == st
	c.mu.Unlock()
	if !open {
		return
	}
	c.closeStream(st, cause)
	c.writeControl(func() error { return c.wfr.WriteRSTStream(st.id, code) })
}

// closeStream forgets st: its handler's context ends, its body and
// writes fail with err.
func (c *conn) closeStream(st *stream, err error) {
	c.mu.Lock()
	if c.streams[st.id] != st {
		c.mu.Unlock()
		return
	}
	delete(c.streams, st.id)
	st.closed = true
	st.closeErr = err
	st.reset.Store(true)
	if st.writeDeadline != nil {
		st.writeDeadline.Stop()
	}
	empty := len(c.streams) == 0
	c.cond.Broadcast()
	c.mu.Unlock()
	st.cancel()
	st.body.closeWithError(err)
	if empty && c.idleTimer != nil {
		c.idleTimer.Reset(c.idle)
	}
}

// goAway tells the client the connection ends, with code.

// sendGoAway marks the connection as going away and queues a GOAWAY
// naming the last stream it took, read under the same lock that new
// streams are taken under, so that no stream it serves is above it. It
// reports whether the connection was already going away.
func (c *conn) sendGoAway(code http2.ErrCode) (already bool) {
	c.mu.Lock()
	already = c.goingAway
	c.goingAway = true
	last := c.maxStreamID.Load()
	c.mu.Unlock()
	if !already || code != http2.ErrCodeNo {
		c.writeControl(func() error { return c.wfr.WriteGoAway(last, code, nil) })
	}
	return already
}

// closeWhenIdle waits for the streams to end (a graceful GOAWAY), then
// reports that the connection ends.
func (c *conn) closeWhenIdle() {
	go func() {
		c.mu.Lock()
		for len(c.streams) > 0 && !c.closed {
			c.cond.Wait()
		}
		c.mu.Unlock()
		// Give the client a moment to read what it was sent.
		time.AfterFunc(goAwayDelay, func() { c.nc.Close() })
	}()
}

func (c *conn) onIdle() {
	c.mu.Lock()
	idle := len(c.streams) == 0
	c.mu.Unlock()
	if idle {
		c.startGoAway()
	}
}

// close ends the connection: every stream's handler sees its context
// end, and writes fail.
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	streams := make([]*stream, 0, len(c.streams))
	for _, st := range c.streams {
		streams = append(streams, st)
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	for _, st := range streams {
		c.closeStream(st, errConnClosed)
	}
	c.cancel()
	// Give the last frames (a GOAWAY) a moment to leave before closing.
	_ = c.nc.SetWriteDeadline(time.Now().Add(goAwayDelay))
	c.wmu.Lock()
	c.closing = true
	c.wmu.Unlock()
	c.wake()
	<-c.sendDone
	c.wmu.Lock()
	c.werr = errConnClosed
	c.drained.Broadcast()
	c.wmu.Unlock()
	c.nc.Close()
}

// maxQueued is how many bytes of frames may wait to be sent before
// handlers' writes wait; control frames (acknowledgements, window
// updates, resets, GOAWAY) never wait, but past maxQueuedControl of them
// waiting the client is not reading what it asks for, and the
// connection ends, as Go's server ends it.
const (
	maxQueued        = 256 << 10
	maxQueuedControl = 10000
)

// writeControl queues the frames fn writes without waiting: the read
// goroutine and Shutdown use it, so that a client that does not read
// cannot stop them.
func (c *conn) writeControl(fn func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if c.queuedControl >= maxQueuedControl {
		c.werr = errNotReading
		c.drained.Broadcast()
		c.nc.Close()
		return c.werr
	}
	if err := fn(); err != nil {
		c.werr = err
		c.nc.Close()
		return err
	}
	c.queuedControl++
	c.wake()
	return nil
}

// queue is the Framer's writer: it adds frames to out, under wmu.
type queue struct{ c *conn }

func (q queue) Write(p []byte) (int, error) { return q.c.out.Write(p) }

func (c *conn) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// send writes the queued frames to the connection until it is closing
// and nothing is left, or a write fails.
func (c *conn) send() {
	defer close(c.sendDone)
	for range c.kick {
		for {
			c.wmu.Lock()
			if c.out.Len() == 0 {
				closing := c.closing
				c.wmu.Unlock()
				if closing {
					return
				}
				break
			}
			buf := c.out
			c.out, c.spare = c.spare, nil
			c.queuedControl = 0
			c.drained.Broadcast()
			c.wmu.Unlock()

			_, err := c.nc.Write(buf.Bytes())
			buf.Reset()
			if buf.Cap() > 64<<10 {
				buf = new(bytes.Buffer) // do not keep a large body's buffer
			}
			c.wmu.Lock()
			c.spare = buf
			if err != nil && c.werr == nil {
				c.werr = err
			}
			c.drained.Broadcast()
			c.wmu.Unlock()
			if err != nil {
				c.nc.Close()
				return
			}
		}
	}
}

// write runs fn, which writes frames, under the write lock, and wakes
// the sending goroutine. It waits first while too much is queued, and
// reports the connection's write error.
func (c *conn) write(fn func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for c.out.Len() >= maxQueued && c.werr == nil {
		c.drained.Wait()
	}
	if c.werr != nil {
		return c.werr
	}
	if err := fn(); err != nil {
		c.werr = err
		c.nc.Close()
		return err
	}
	if c.out.Len() > 0 {
		c.wake()
	}
	return nil
}

var (
	errClientReset = errors.New("h2: the client reset the stream")
	errServerReset = errors.New("h2: the stream was reset")
	errConnClosed  = errors.New("h2: the connection is closed")
	errNotReading  = errors.New("h2: the client does not read what it is sent")
	errTooMuchBody = errors.New("h2: the client sent more than its Content-Length")
	errShortBody   = errors.New("h2: the client sent less than its Content-Length")
	errBodyClosed  = errors.New("h2: the request body is closed")
)

// fakeListener gives BaseContext the address it asks for.
type fakeListener struct{ c net.Conn }

func (l fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (l fakeListener) Close() error              { return nil }
func (l fakeListener) Addr() net.Addr            { return l.c.LocalAddr() }

// noteStream makes id, the stream of a frame that ends the connection,
// the last stream the GOAWAY names, if it is higher, as Go's server
// does.
func (c *conn) noteStream(id uint32) {
	if id > c.maxStreamID.Load() {
		c.maxStreamID.Store(id)
	}
}

// frameTracker passes the client's bytes to the Framer and notes the
// type and stream of the frame being read, which a read error does not
// tell.
type frameTracker struct {
	r        io.Reader
	head     [9]byte
	got      int    // bytes of head read
	left     uint32 // payload bytes of the current frame still to come
	streamID uint32
	typ      http2.FrameType
}

func (t *frameTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		if t.left > 0 {
			k := min(uint32(len(b)), t.left)
			t.left -= k
			b = b[k:]
			continue
		}
		k := copy(t.head[t.got:], b)
		t.got += k
		b = b[k:]
		if t.got == len(t.head) {
			t.got = 0
			t.left = uint32(t.head[0])<<16 | uint32(t.head[1])<<8 | uint32(t.head[2])
			t.typ = http2.FrameType(t.head[3])
			t.streamID = (uint32(t.head[5])<<24 | uint32(t.head[6])<<16 | uint32(t.head[7])<<8 | uint32(t.head[8])) & (1<<31 - 1)
		}
	}
	return n, err
}
