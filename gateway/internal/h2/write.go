package h2

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// headerFragment is the size of the pieces a header block is written
// in: the smallest SETTINGS_MAX_FRAME_SIZE a client may announce.
const headerFragment = 16384

// writeHeaderBlock writes the header block in c.hbuf for stream id as a
// HEADERS frame and as many CONTINUATION frames as it needs. It runs
// under the write lock.
func (c *conn) writeHeaderBlock(id uint32, end bool) error {
	block := c.hbuf.Bytes()
	first := true
	for first || len(block) > 0 {
		frag := block[:min(len(block), headerFragment)]
		block = block[len(frag):]
		var err error
		if first {
			err = c.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndStream: end, EndHeaders: len(block) == 0})
		} else {
			err = c.wfr.WriteContinuation(id, len(block) == 0, frag)
		}
		if err != nil {
			return err
		}
		first = false
	}
	return nil
}

// encodeFields encodes h's fields named in keys (all of h, sorted, when
// keys is nil) as HTTP/2 writes them: lower-cased, leaving out names and
// values HTTP/2 cannot carry and any Transfer-Encoding but "trailers".
func encodeFields(enc *hpack.Encoder, h http.Header, keys []string) {
	if keys == nil {
		keys = make([]string, 0, len(h))
		for k := range h {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	}
	for _, k := range keys {
		vv := h[k]
		name, ok := lowerASCII(k)
		if !ok || !validWireName(name) {
			continue
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) || name == "transfer-encoding" && v != "trailers" {
				continue
			}
			enc.WriteField(hpack.HeaderField{Name: name, Value: v})
		}
	}
}

// lowerASCII lower-cases s; false if s is not ASCII.
func lowerASCII(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// validWireName reports whether a lower-cased name may go in an HTTP/2
// header block: a token with no upper case.
func validWireName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if !httpguts.IsTokenRune(rune(b)) || 'A' <= b && b <= 'Z' {
			return false
		}
	}
	return true
}

// writeData writes p as DATA frames on st as the windows allow, ending
// the stream after it when end is set.
func (st *stream) writeData(p []byte, end bool) error {
	c := st.c
	for {
		n, err := st.reserve(len(p))
		if err != nil {
			return err
		}
		chunk := p[:n]
		p = p[n:]
		last := end && len(p) == 0
		skipped := false
		if err := c.write(func() error {
			if st.reset.Load() {
				skipped = true // the stream went while this waited
				return nil
			}
			return c.wfr.WriteData(st.id, last, chunk)
		}); err != nil {
			return err
		}
		if skipped {
			c.giveBack(n)
			return st.closeErr
		}
		if len(p) == 0 {
			return nil
		}
	}
}

// reserve waits until both windows are open, then takes up to want
// bytes of them, as much as one frame carries. Wanting 0 takes nothing
// and does not wait.
func (st *stream) reserve(want int) (int, error) {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if st.closed {
			return 0, st.closeErr
		}
		if c.closed {
			return 0, errConnClosed
		}
		if want == 0 {
			return 0, nil
		}
		if st.sendWindow > maxWindow {
			c.flowErr = true
		}
		if n := min(int64(want), st.sendWindow, c.sendWindow, int64(c.peerFrameSize)); n > 0 && !c.flowErr {
			st.sendWindow -= n
			c.sendWindow -= n
			return int(n), nil
		}
		c.cond.Wait()
	}
}

// giveBack returns n bytes of the connection's send window that a frame
// not sent had taken.
func (c *conn) giveBack(n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.sendWindow += int64(n)
	c.cond.Broadcast()
	c.mu.Unlock()
}

// tryReserve takes up to want bytes of the windows without waiting.
func (st *stream) tryReserve(want int) int {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.closed || c.closed || c.flowErr || st.sendWindow > maxWindow {
		return 0
	}
	n := max(0, min(int64(want), st.sendWindow, c.sendWindow, int64(c.peerFrameSize)))
	st.sendWindow -= n
	c.sendWindow -= n
	return int(n)
}

// startGoAway begins a graceful close: no new streams, the connection
// ends when the last one does.
func (c *conn) startGoAway() {
	if !c.sendGoAway(http2.ErrCodeNo) {
		c.closeWhenIdle()
	}
}

// bodyAllowed reports whether an answer with status may have a body.
func bodyAllowed(status int) bool {
	return !(status >= 100 && status < 200 || status == http.StatusNoContent || status == http.StatusNotModified)
}

func nowDate() string { return time.Now().UTC().Format(http.TimeFormat) }
