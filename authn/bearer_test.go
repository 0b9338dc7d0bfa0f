package authn_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
)

// tokens is a Token authenticator over a fixed map that records the
// tokens it was asked about.
type tokens struct {
	known map[string]string // token → user
	err   error             // returned for unknown tokens
	asked []string
}

func (ts *tokens) AuthenticateToken(_ context.Context, token string) (*authn.Response, bool, error) {
	ts.asked = append(ts.asked, token)
	if name, ok := ts.known[token]; ok {
		return &authn.Response{User: authn.User{Name: name}, Authenticator: "test"}, true, nil
	}
	return nil, false, ts.err
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		header    string
		wantToken string
		wantOK    bool
	}{
		{name: "A.2 bearer scheme", header: "Bearer abc", wantToken: "abc", wantOK: true},
		{name: "A.2 scheme is case-insensitive", header: "bEaReR abc", wantToken: "abc", wantOK: true},
		{name: "A.2 anything after a second space is ignored", header: "Bearer abc def", wantToken: "abc", wantOK: true},
		{name: "A.2 the header is trimmed", header: "  Bearer abc \t", wantToken: "abc", wantOK: true},
		{name: "A.2 extra space before the token means an empty token", header: "Bearer  abc", wantOK: false},
		{name: "A.2 scheme alone is no credential", header: "Bearer", wantOK: false},
		{name: "A.2 scheme with trailing space is no credential", header: "Bearer ", wantOK: false},
		{name: "A.2 tab is not a separator", header: "Bearer\tabc", wantOK: false},
		{name: "A.2 other schemes are not mine", header: "Basic YWxpY2U6cHc=", wantOK: false},
		{name: "A.2 empty header is not mine", header: "", wantOK: false},
		{name: "A.2 scheme must be exactly bearer", header: "Bearerx abc", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := authn.BearerToken(tt.header)
			if ok != tt.wantOK || got != tt.wantToken {
				t.Errorf("BearerToken(%q) = (%q, %v), want (%q, %v)", tt.header, got, ok, tt.wantToken, tt.wantOK)
			}
		})
	}
}

func TestBearer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		header     string
		tokenErr   error
		wantUser   string
		wantErr    error
		wantAsked  bool
		wantHeader bool // Authorization still present afterwards
	}{
		{name: "A.2 a known token authenticates and the header is deleted", header: "Bearer good", wantUser: "alice", wantAsked: true},
		{name: "A.2 Bearer good trailing is authenticated as good", header: "Bearer good trailing", wantUser: "alice", wantAsked: true},
		{name: "A.2 an unknown token is an invalid bearer token", header: "Bearer nope", wantErr: authn.ErrInvalidToken, wantAsked: true, wantHeader: true},
		{name: "A.2 the token authenticator's error is kept", header: "Bearer nope", tokenErr: errA, wantErr: errA, wantAsked: true, wantHeader: true},
		{name: "A.2 an empty token is not mine and not looked up", header: "Bearer  good", wantHeader: true},
		{name: "A.2 no header is not mine", header: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := &tokens{known: map[string]string{"good": "alice"}, err: tt.tokenErr}
			r := httptest.NewRequest("GET", "/", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			resp, ok, err := authn.Bearer(ts).AuthenticateRequest(r)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if (tt.wantUser != "") != ok || (ok && resp.User.Name != tt.wantUser) {
				t.Fatalf("got (%+v, %v), want user %q", resp, ok, tt.wantUser)
			}
			if (len(ts.asked) > 0) != tt.wantAsked {
				t.Errorf("token authenticator asked %q, want asked %v", ts.asked, tt.wantAsked)
			}
			if got := r.Header.Get("Authorization") != ""; got != tt.wantHeader {
				t.Errorf("Authorization present = %v, want %v", got, tt.wantHeader)
			}
			if err != nil && strings.Contains(err.Error(), "nope") {
				t.Errorf("error %q quotes the token", err)
			}
		})
	}
}

func wsRequest(protocols ...string) *http.Request {
	r := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods/p/exec", nil)
	r.Header.Set("Connection", "keep-alive, Upgrade")
	r.Header.Set("Upgrade", "websocket")
	for _, p := range protocols {
		r.Header.Add("Sec-WebSocket-Protocol", p)
	}
	return r
}

func wsToken(token string) string {
	return authn.WebSocketProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))
}

func TestWebSocketBearer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		r             *http.Request
		wantUser      string
		wantErr       error
		wantProtocols []string // Sec-WebSocket-Protocol afterwards
	}{
		{name: "A.2 websocket token authenticates and is removed", r: wsRequest("v4.channel.k8s.io, " + wsToken("good")), wantUser: "alice", wantProtocols: []string{"v4.channel.k8s.io"}},
		{name: "A.2 websocket token in its own header line", r: wsRequest(wsToken("good"), "v4.channel.k8s.io,base64.channel.k8s.io"), wantUser: "alice", wantProtocols: []string{"v4.channel.k8s.io,base64.channel.k8s.io"}},
		{name: "A.2 websocket unknown token is an invalid bearer token", r: wsRequest("chat", wsToken("nope")), wantErr: authn.ErrInvalidToken, wantProtocols: []string{"chat", wsToken("nope")}},
		{name: "A.2 websocket two tokens are an error", r: wsRequest("chat", wsToken("good"), wsToken("good")), wantErr: authn.ErrWebSocketMultipleTokens, wantProtocols: []string{"chat", wsToken("good"), wsToken("good")}},
		{name: "A.2 websocket token needs another subprotocol", r: wsRequest(wsToken("good")), wantErr: authn.ErrWebSocketNoSubprotocol, wantProtocols: []string{wsToken("good")}},
		{name: "A.2 websocket token must be unpadded base64url", r: wsRequest("chat", authn.WebSocketProtocolPrefix+"Z29vZA=="), wantErr: authn.ErrWebSocketTokenEncoding, wantProtocols: []string{"chat", authn.WebSocketProtocolPrefix + "Z29vZA=="}},
		{name: "A.2 websocket token must be UTF-8", r: wsRequest("chat", authn.WebSocketProtocolPrefix+base64.RawURLEncoding.EncodeToString([]byte{0xff, 0xfe})), wantErr: authn.ErrWebSocketTokenUTF8, wantProtocols: []string{"chat", authn.WebSocketProtocolPrefix + "__4"}},
		{name: "A.2 websocket empty token is not mine", r: wsRequest("chat", authn.WebSocketProtocolPrefix), wantProtocols: []string{"chat", authn.WebSocketProtocolPrefix}},
		{name: "A.2 websocket without token is not mine", r: wsRequest("chat"), wantProtocols: []string{"chat"}},
		{name: "A.2 websocket protocol outside an upgrade is ignored", r: func() *http.Request {
			r := wsRequest("chat", wsToken("good"))
			r.Header.Del("Upgrade")
			return r
		}(), wantProtocols: []string{"chat", wsToken("good")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := &tokens{known: map[string]string{"good": "alice"}}
			resp, ok, err := authn.WebSocketBearer(ts).AuthenticateRequest(tt.r)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if (tt.wantUser != "") != ok || (ok && resp.User.Name != tt.wantUser) {
				t.Fatalf("got (%+v, %v), want user %q", resp, ok, tt.wantUser)
			}
			if got := tt.r.Header.Values("Sec-WebSocket-Protocol"); strings.Join(got, "|") != strings.Join(tt.wantProtocols, "|") {
				t.Errorf("Sec-WebSocket-Protocol = %q, want %q", got, tt.wantProtocols)
			}
		})
	}
}

func TestIsWebSocket(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, connection, upgrade string
		want                      bool
	}{
		{name: "A.2 upgrade request", connection: "Upgrade", upgrade: "websocket", want: true},
		{name: "A.2 upgrade among connection options, any case", connection: "keep-alive,  UPGRADE ", upgrade: "WebSocket", want: true},
		{name: "A.2 other upgrade protocol", connection: "Upgrade", upgrade: "h2c"},
		{name: "A.2 no upgrade option", connection: "keep-alive", upgrade: "websocket"},
		{name: "A.2 upgrade as part of a longer option", connection: "upgrade-insecure", upgrade: "websocket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			h.Set("Connection", tt.connection)
			h.Set("Upgrade", tt.upgrade)
			if got := authn.IsWebSocket(h); got != tt.want {
				t.Errorf("IsWebSocket(Connection %q, Upgrade %q) = %v, want %v", tt.connection, tt.upgrade, got, tt.want)
			}
		})
	}
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  abc", "Bearer abc def", "Basic x", "", " ", "Bearer", "BEARER \x00", "Bearer \u00a0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := authn.BearerToken(header)
		if ok != (token != "") {
			t.Fatalf("BearerToken(%q) = (%q, %v): ok must mean a non-empty token", header, token, ok)
		}
		if strings.Contains(token, " ") {
			t.Fatalf("BearerToken(%q) = %q: a token never contains a space", header, token)
		}
		if ok && !strings.Contains(header, token) {
			t.Fatalf("BearerToken(%q) = %q: not a substring of the header", header, token)
		}
	})
}

func FuzzWebSocketToken(f *testing.F) {
	f.Add("chat, " + wsToken("good"))
	f.Add(wsToken("a") + "," + wsToken("b"))
	f.Add(authn.WebSocketProtocolPrefix + "!!")
	f.Add(",,,")
	f.Fuzz(func(t *testing.T, header string) {
		token, others, err := authn.WebSocketToken([]string{header})
		if err != nil {
			if token != "" || others != nil {
				t.Fatalf("WebSocketToken(%q) returned (%q, %q) with error %v", header, token, others, err)
			}
			return
		}
		if token != "" && len(others) == 0 {
			t.Fatalf("WebSocketToken(%q) accepted a token without another subprotocol", header)
		}
		for _, p := range others {
			if strings.HasPrefix(p, authn.WebSocketProtocolPrefix) {
				t.Fatalf("WebSocketToken(%q) left token protocol %q among the others", header, p)
			}
		}
	})
}
