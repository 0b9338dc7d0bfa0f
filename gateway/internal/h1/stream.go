package h1

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The fast path also carries requests that arrived on HTTP/2 streams:
// Go's HTTP/2 server frames them, the gateway's handler renders the
// request policy, and ForwardStream sends each over the same upstream
// pool as HTTP/1.1 requests, writing the upstream's answer to the
// stream's ResponseWriter. It takes the same requests the HTTP/1.1 path
// takes; httputil.ReverseProxy serves the rest.

// TakesStream reports whether ForwardStream takes r, an HTTP/2 request
// served by net/http: a method safe to send again, no body, a query a
// reverse proxy forwards unchanged, an origin-form target, and a URL
// skip does not refuse.
func TakesStream(r *http.Request, skip func(*url.URL) bool) bool {
	return r.ProtoMajor == 2 && idempotent(r.Method) && r.ContentLength == 0 &&
		(r.Body == nil || r.Body == http.NoBody) && strings.HasPrefix(r.URL.Path, "/") &&
		plainQuery(r.URL.RawQuery) && (skip == nil || !skip(r.URL))
}

// ForwardStream sends r upstream with header, which must hold every
// header line to send but Host and the framing's, and writes the answer
// to w as httputil.ReverseProxy writes one: informational answers as
// they come, then the final status, headers, body and trailers. A Result
// with an error and a non-zero Status means the answer broke off after
// its head was written: the caller must then end the stream as broken
// (panic with http.ErrAbortHandler), not as whole.
func (t *Upstream) ForwardStream(w http.ResponseWriter, r *http.Request, host string, header http.Header) Result {
	start := time.Now()
	if err := validHeader(header); err != nil {
		return Result{Err: err}
	}
	req := upstreamRequest{method: r.Method, target: r.URL.RequestURI(), host: host, header: header}
	var resp response
	var ans *upstreamAnswer
	code, err := t.roundTrip(r.Context(), &req, &resp, func(uc *upstreamConn) (int, error) {
		ans = &upstreamAnswer{wait: time.Since(start)}
		return relayToWriter(w, uc, &resp, r.Method, ans)
	})
	res := Result{Status: code, Err: err}
	if ans != nil {
		res.UpstreamStatus, res.UpstreamWait, res.Refusal = ans.status, ans.wait, ans.refusal
	}
	return res
}

// relayToWriter writes the answer whose head resp holds to w, reading
// its body from uc.
func relayToWriter(w http.ResponseWriter, uc *upstreamConn, resp *response, method string, ans *upstreamAnswer) (int, error) {
	h := w.Header()
	for informational := 0; resp.status >= 100 && resp.status < 200; informational++ {
		if resp.status == http.StatusSwitchingProtocols {
			return 0, errors.New("upstream switched protocols without an upgrade request")
		}
		if informational == maxInformational {
			return 0, errors.New("upstream sent too many informational answers")
		}
		for _, f := range resp.fields {
			h.Add(string(f[0]), string(f[1]))
		}
		w.WriteHeader(resp.status)
		clear(h)
		_, _ = uc.br.Discard(len(resp.head))
		n, err := peekHead(uc.br)
		if err != nil {
			return resp.status, err
		}
		head, _ := uc.br.Peek(n)
		if err := parseResponseHead(head, resp); err != nil {
			return resp.status, err
		}
	}
	ans.status = resp.status
	for _, f := range resp.fields {
		h.Add(string(f[0]), string(f[1]))
	}
	if resp.contentLength >= 0 {
		h["Content-Length"] = []string{strconv.FormatInt(resp.contentLength, 10)}
	}
	hasBody := !bodyless(method, resp.status)
	untilClose := hasBody && !resp.chunked && resp.contentLength < 0
	if untilClose {
		resp.close = true
	}
	w.WriteHeader(resp.status)
	_, _ = uc.br.Discard(len(resp.head))
	if hasBody {
		keepRefusal(resp, uc.br, ans)
	}
	var err error
	switch {
	case !hasBody:
	case resp.chunked:
		err = copyChunked(w, uc.br)
	case untilClose:
		err = copyBody(w, uc.br, -1)
	default:
		err = copyBody(w, uc.br, resp.contentLength)
	}
	return resp.status, err
}

// copyBody copies n bytes (n < 0: until src ends) from src to w,
// flushing w before every read that would block.
func copyBody(w http.ResponseWriter, src *bufio.Reader, n int64) error {
	return copyN(w, func() error { flush(w); return nil }, src, n)
}

// copyChunked decodes a chunked body from src into w, and its trailer
// fields into w's trailers, checking the framing so that the upstream
// connection stays in step.
func copyChunked(w http.ResponseWriter, src *bufio.Reader) error {
	for {
		line, err := readLine(w, src)
		if err != nil {
			return err
		}
		sizeText, _, _ := bytes.Cut(line, []byte(";"))
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeText)), 16, 64)
		if err != nil || size < 0 {
			return errors.New("upstream sent a malformed chunk size")
		}
		if size == 0 {
			for {
				line, err := readLine(w, src)
				if err != nil {
					return err
				}
				if len(line) == 0 {
					return nil
				}
				name, value, ok := bytes.Cut(line, []byte(":"))
				if !ok || !isToken(string(name)) {
					return errors.New("upstream sent a malformed trailer")
				}
				w.Header().Add(http.TrailerPrefix+string(name), string(bytes.TrimSpace(value)))
			}
		}
		if err := copyBody(w, src, size); err != nil {
			return err
		}
		if line, err := readLine(w, src); err != nil || len(line) != 0 {
			return errors.New("upstream sent a malformed chunk")
		}
	}
}

// readLine reads one CRLF-terminated line (without the CRLF), flushing w
// first if the line has not fully arrived. The line is valid until src
// is read again.
func readLine(w http.ResponseWriter, src *bufio.Reader) ([]byte, error) {
	if p, _ := src.Peek(src.Buffered()); bytes.IndexByte(p, '\n') < 0 {
		flush(w)
	}
	line, err := src.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errors.New("upstream sent a line without CRLF")
	}
	return line[:len(line)-2], nil
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
