package authn

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"
)

// ErrInvalidToken is returned when a request carries a bearer token that no
// token authenticator recognised and none reported a reason.
var ErrInvalidToken = errors.New("invalid bearer token")

// Bearer returns a Request that reads a bearer token from the
// Authorization header and authenticates it with t. The header is trimmed
// and split on single spaces into at most three parts; the scheme must be
// "bearer" in any case, and anything after a second space is ignored. An
// empty token is no credential. On success the Authorization header is
// deleted, so the token never travels further.
func Bearer(t Token) Request { return bearer{t} }

type bearer struct{ t Token }

var _ Request = bearer{}

func (b bearer) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	token, ok := BearerToken(first(r.Header, "Authorization"))
	if !ok {
		return nil, false, nil
	}
	resp, ok, err := b.t.AuthenticateToken(r.Context(), token)
	if ok {
		delete(r.Header, "Authorization")
		return resp, true, nil
	}
	if err == nil {
		err = ErrInvalidToken
	}
	return nil, false, err
}

// BearerToken extracts the token from an Authorization header value as
// kube-apiserver does. It reports false when the value is not a bearer
// credential or the token is empty.
func BearerToken(header string) (string, bool) {
	header = strings.TrimSpace(header)
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token, _, _ := strings.Cut(rest, " ")
	return token, token != ""
}

// WebSocketProtocolPrefix starts the WebSocket sub-protocol that carries a
// bearer token, base64url-encoded without padding, for clients (browsers)
// that cannot set an Authorization header on a WebSocket.
const WebSocketProtocolPrefix = "base64url.bearer.authorization.k8s.io."

const webSocketProtocolHeader = "Sec-Websocket-Protocol" // canonical form

// Errors of the WebSocket bearer sub-protocol. None includes the token.
var (
	ErrWebSocketMultipleTokens = errors.New("multiple base64url.bearer.authorization tokens specified")
	ErrWebSocketTokenEncoding  = errors.New("invalid base64url.bearer.authorization token encoding")
	ErrWebSocketTokenUTF8      = errors.New("invalid base64url.bearer.authorization token: not UTF-8")
	ErrWebSocketNoSubprotocol  = errors.New("missing additional subprotocol next to the bearer token subprotocol")
)

// WebSocketBearer returns a Request that reads a bearer token from the
// WebSocket sub-protocol list of a WebSocket upgrade request and
// authenticates it with t. At least one other sub-protocol must be offered,
// because the server has to echo one back. On success the token
// sub-protocol is removed from the header.
func WebSocketBearer(t Token) Request { return webSocketBearer{t} }

type webSocketBearer struct{ t Token }

var _ Request = webSocketBearer{}

func (w webSocketBearer) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	if !IsWebSocket(r.Header) {
		return nil, false, nil
	}
	token, others, err := WebSocketToken(r.Header[webSocketProtocolHeader])
	if err != nil || token == "" {
		return nil, false, err
	}
	resp, ok, err := w.t.AuthenticateToken(r.Context(), token)
	if ok {
		r.Header.Set(webSocketProtocolHeader, strings.Join(others, ","))
		return resp, true, nil
	}
	if err == nil {
		err = ErrInvalidToken
	}
	return nil, false, err
}

// WebSocketToken finds the bearer token among the comma-separated
// sub-protocols of the given Sec-WebSocket-Protocol header values. It
// returns the decoded token ("" if there is none) and the other
// sub-protocols, trimmed, in order.
func WebSocketToken(values []string) (token string, others []string, err error) {
	seen := false
	for _, v := range values {
		for p := range strings.SplitSeq(v, ",") {
			p = strings.TrimSpace(p)
			encoded, ok := strings.CutPrefix(p, WebSocketProtocolPrefix)
			if !ok {
				others = append(others, p)
				continue
			}
			if seen {
				return "", nil, ErrWebSocketMultipleTokens
			}
			seen = true
			raw, err := base64.RawURLEncoding.DecodeString(encoded)
			if err != nil {
				return "", nil, ErrWebSocketTokenEncoding
			}
			if !utf8.Valid(raw) {
				return "", nil, ErrWebSocketTokenUTF8
			}
			token = string(raw)
		}
	}
	if token != "" && len(others) == 0 {
		return "", nil, ErrWebSocketNoSubprotocol
	}
	return token, others, nil
}

// IsWebSocket reports whether h asks for a WebSocket upgrade: Upgrade is
// "websocket" and Connection lists "upgrade", both in any case.
func IsWebSocket(h http.Header) bool {
	if !strings.EqualFold(first(h, "Upgrade"), "websocket") {
		return false
	}
	for opt := range strings.SplitSeq(first(h, "Connection"), ",") {
		if strings.EqualFold(strings.TrimSpace(opt), "upgrade") {
			return true
		}
	}
	return false
}

// first is h.Get(key) for a key already in canonical form, without
// canonicalising it again on every request.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
