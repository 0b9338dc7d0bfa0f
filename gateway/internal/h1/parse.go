package h1

import (
	"bufio"
	"bytes"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// This file parses HTTP/1.1 message heads for the lean serving path
// (lean.go). The parser is deliberately strict: it accepts only the plain
// shapes that ordinary clients send and reports everything else as
// errNotPlain, so that the caller can hand the connection to net/http,
// which applies the full HTTP/1.1 rules and answers errors.

var (
	errNotPlain     = errors.New("request head is not a plain HTTP/1.1 head")
	errHeadTooLarge = errors.New("message head does not fit the buffer")
)

// maxHeaders bounds the header lines of a request the lean path takes.
const maxHeaders = 64

// field is one header line; both strings point into the head.
type field struct{ name, value string }

// request is a parsed request head. Every string points into head, one
// allocation per request.
type request struct {
	head   string
	method string
	target string // origin-form: starts with '/'
	fields []field
	url    url.URL // target, parsed by plain
}

// peekHead waits until br holds a whole message head (through the empty
// line) and returns its length. It never consumes anything, and it fails
// with errHeadTooLarge if the head cannot fit br's buffer.
func peekHead(br *bufio.Reader) (int, error) {
	from := 0
	for {
		n := br.Buffered()
		if n == 0 {
			n = 1
		}
		p, err := br.Peek(n)
		if len(p) == 0 {
			return 0, err
		}
		if i := bytes.Index(p[from:], []byte("\r\n\r\n")); i >= 0 {
			return from + i + 4, nil
		}
		if len(p) >= br.Size() {
			return 0, errHeadTooLarge
		}
		if err != nil {
			return 0, err
		}
		from = max(0, len(p)-3)
		if _, err := br.Peek(len(p) + 1); err != nil && br.Buffered() <= len(p) {
			return 0, err
		}
	}
}

// parseTarget parses an origin-form target into u as url.ParseRequestURI
// would. A target of unreserved bytes, '/' and the sub-delimiters a path
// keeps unescaped ("$&+,:;=@") needs no decoding: its path is itself and
// its query what follows the first '?'. Anything else goes through
// url.ParseRequestURI.
func parseTarget(target string, u *url.URL) error {
	path, query, hasQuery := strings.Cut(target, "?")
	for i := 0; i < len(path); i++ {
		if c := path[i]; !plainPathByte(c) {
			v, err := url.ParseRequestURI(target)
			if err != nil {
				return err
			}
			*u = *v
			return nil
		}
	}
	*u = url.URL{Path: path, RawQuery: query, ForceQuery: hasQuery && query == ""}
	return nil
}

// plainPathByte reports whether c stands for itself in a URL path: it
// needs neither decoding nor escaping.
func plainPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~/$&+,:;=@", c) >= 0
}

// parseRequestHead parses head, which ends with "\r\n\r\n", into r,
// reusing r.fields. It returns errNotPlain for anything but
// "METHOD /origin-form-target HTTP/1.1" and well-formed header lines.
func parseRequestHead(head string, r *request) error {
	r.head, r.fields = head, r.fields[:0]
	line, rest, ok := cutLine(head)
	if !ok {
		return errNotPlain
	}
	sp1 := strings.IndexByte(line, ' ')
	if sp1 <= 0 {
		return errNotPlain
	}
	r.method = line[:sp1]
	if !isToken(r.method) {
		return errNotPlain
	}
	line = line[sp1+1:]
	sp2 := strings.IndexByte(line, ' ')
	if sp2 <= 0 || line[sp2+1:] != "HTTP/1.1" {
		return errNotPlain
	}
	r.target = line[:sp2]
	if r.target[0] != '/' {
		return errNotPlain
	}
	for i := 0; i < len(r.target); i++ {
		if c := r.target[i]; c <= ' ' || c >= 0x7f {
			return errNotPlain
		}
	}
	for {
		line, rest, ok = cutLine(rest)
		if !ok {
			return errNotPlain
		}
		if line == "" {
			return nil
		}
		if len(r.fields) == maxHeaders {
			return errNotPlain
		}
		f, err := parseField(line)
		if err != nil {
			return err
		}
		r.fields = append(r.fields, f)
	}
}

// parseField parses "Name: value" with optional whitespace around the
// value. Obsolete line folding, empty names and control bytes are refused.
func parseField(line string) (field, error) {
	colon := strings.IndexByte(line, ':')
	if colon <= 0 || !isToken(line[:colon]) {
		return field{}, errNotPlain
	}
	v := line[colon+1:]
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return field{}, errNotPlain
		}
	}
	return field{name: line[:colon], value: trimOWS(v)}, nil
}

// response is the part of an upstream response head the relay needs.
type response struct {
	head          []byte // the whole head, valid until the reader moves
	status        int
	statusLine    []byte // "200 OK", after the version
	fields        [][2][]byte
	contentLength int64 // -1: none
	chunked       bool
	close         bool // the upstream will close the connection after this response
	date          bool // the head has a Date
}

// parseResponseHead parses an upstream response head into r.
func parseResponseHead(head []byte, r *response) error {
	*r = response{head: head, fields: r.fields[:0], contentLength: -1}
	line, rest, ok := cutLineBytes(head)
	if !ok || len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return errors.New("upstream sent a malformed status line")
	}
	http10 := line[7] == '0'
	r.statusLine = line[9:]
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil || code < 100 || code > 999 || (len(line) > 12 && line[12] != ' ') {
		return errors.New("upstream sent a malformed status code")
	}
	r.status = code
	keepAlive := false
	var named [][]byte
	for {
		line, rest, ok = cutLineBytes(rest)
		if !ok {
			return errors.New("upstream sent a malformed header")
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return errors.New("upstream sent a malformed header")
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (r.contentLength >= 0 && r.contentLength != n) {
				return errors.New("upstream sent an invalid Content-Length")
			}
			r.contentLength = n
			continue // written by the relay, which knows the framing
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) || r.chunked {
				return errors.New("upstream sent an unsupported Transfer-Encoding")
			}
			r.chunked = true
			continue
		case bytes.EqualFold(name, []byte("Connection")):
			for _, tok := range bytes.Split(value, []byte(",")) {
				tok = bytes.TrimSpace(tok)
				switch {
				case bytes.EqualFold(tok, []byte("close")):
					r.close = true
				case bytes.EqualFold(tok, []byte("keep-alive")):
					keepAlive = true
				case len(tok) > 0:
					// A header named here is hop-by-hop: it is
					// dropped below, as net/http's proxy drops it.
					named = append(named, tok)
				}
			}
			continue
		case bytes.EqualFold(name, []byte("Date")):
			r.date = true
		case bytes.EqualFold(name, []byte("Keep-Alive")), bytes.EqualFold(name, []byte("Proxy-Connection")),
			bytes.EqualFold(name, []byte("Upgrade")), bytes.EqualFold(name, []byte("TE")),
			bytes.EqualFold(name, []byte("Proxy-Authenticate")), bytes.EqualFold(name, []byte("Proxy-Authorization")):
			continue // hop-by-hop
		}
		r.fields = append(r.fields, [2][]byte{name, value})
	}
	if len(named) > 0 {
		r.fields = slices.DeleteFunc(r.fields, func(f [2][]byte) bool {
			return slices.ContainsFunc(named, func(n []byte) bool { return bytes.EqualFold(n, f[0]) })
		})
	}
	if r.chunked {
		r.contentLength = -1
	}
	if http10 && !keepAlive {
		r.close = true
	}
	return nil
}

// bodyless reports whether a response with this status to method has no
// body whatever its headers say.
func bodyless(method string, status int) bool {
	return method == "HEAD" || status < 200 || status == 204 || status == 304
}

func cutLine(s string) (line, rest string, ok bool) {
	i := strings.IndexByte(s, '\n')
	if i <= 0 || s[i-1] != '\r' {
		return "", "", false
	}
	return s[:i-1], s[i+1:], true
}

func cutLineBytes(s []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(s, '\n')
	if i <= 0 || s[i-1] != '\r' {
		return nil, nil, false
	}
	return s[:i-1], s[i+1:], true
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// isToken reports whether s is a non-empty RFC 9110 token.
func isToken(s string) bool {
	return s != "" && alnumOr(s, "!#$%&'*+-.^_`|~")
}

// alnumOr reports whether every byte of s is an ASCII letter or digit or
// one of extra.
func alnumOr(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}
