package bootstrap_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn/bootstrap"
)

const (
	tokenID     = "abcdef"
	tokenSecret = "0123456789abcdef"
	token       = tokenID + "." + tokenSecret
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// store is a Getter over a map keyed by namespace/name.
type store map[string]bootstrap.Secret

func (s store) GetSecretData(_ context.Context, namespace, name string) (bootstrap.Secret, error) {
	sec, ok := s[namespace+"/"+name]
	if !ok {
		return bootstrap.Secret{}, fmt.Errorf("secrets %q: %w", name, bootstrap.ErrNotFound)
	}
	return sec, nil
}

// goodSecret is a valid token Secret for token, changed by edit.
func goodSecret(edit func(*bootstrap.Secret)) store {
	s := bootstrap.Secret{
		Namespace: "kube-system",
		Name:      "bootstrap-token-" + tokenID,
		Type:      "bootstrap.kubernetes.io/token",
		Data: map[string][]byte{
			"token-id":                       []byte(tokenID),
			"token-secret":                   []byte(tokenSecret),
			"expiration":                     []byte(now.Add(time.Hour).Format(time.RFC3339)),
			"usage-bootstrap-authentication": []byte("true"),
			"usage-bootstrap-signing":        []byte("true"),
		},
	}
	if edit != nil {
		edit(&s)
	}
	return store{s.Namespace + "/" + s.Name: s}
}

func newAuthenticator(g bootstrap.Getter, log *bytes.Buffer) *bootstrap.Authenticator {
	return bootstrap.New(g, bootstrap.Options{
		Now:    func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
}

func TestBootstrapTokens_A10(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		store      store
		token      string
		wantGroups []string // nil: refused with (nil, false, nil)
		wantLog    string   // in the debug log when refused
	}{
		{name: "good token", store: goodSecret(nil), token: token,
			wantGroups: []string{"system:bootstrappers"}},
		{name: "no expiration never expires", store: goodSecret(func(s *bootstrap.Secret) { delete(s.Data, "expiration") }), token: token,
			wantGroups: []string{"system:bootstrappers"}},
		{name: "empty expiration never expires", store: goodSecret(func(s *bootstrap.Secret) { s.Data["expiration"] = nil }), token: token,
			wantGroups: []string{"system:bootstrappers"}},
		{name: "expiration with offset in the future", store: goodSecret(func(s *bootstrap.Secret) {
			s.Data["expiration"] = []byte(now.Add(time.Minute).In(time.FixedZone("x", 3600)).Format(time.RFC3339))
		}), token: token, wantGroups: []string{"system:bootstrappers"}},
		{name: "authentication usage only", store: goodSecret(func(s *bootstrap.Secret) { delete(s.Data, "usage-bootstrap-signing") }), token: token,
			wantGroups: []string{"system:bootstrappers"}},
		{name: "wrong secret", store: goodSecret(nil), token: tokenID + ".0123456789abcdee", wantLog: "wrong token-secret"},
		{name: "secret is a prefix", store: goodSecret(func(s *bootstrap.Secret) { s.Data["token-secret"] = []byte(tokenSecret[:15]) }), token: token,
			wantLog: "wrong token-secret"},
		{name: "no token-secret", store: goodSecret(func(s *bootstrap.Secret) { delete(s.Data, "token-secret") }), token: token,
			wantLog: "wrong token-secret"},
		{name: "token-id differs from the name", store: goodSecret(func(s *bootstrap.Secret) { s.Data["token-id"] = []byte("zzzzzz") }), token: token,
			wantLog: "wrong token-id"},
		{name: "no such secret", store: store{}, token: token, wantLog: "no secret for bootstrap token"},
		{name: "expired", store: goodSecret(func(s *bootstrap.Secret) { s.Data["expiration"] = []byte(now.Add(-time.Second).Format(time.RFC3339)) }),
			token: token, wantLog: "expired at"},
		{name: "expiring this instant", store: goodSecret(func(s *bootstrap.Secret) { s.Data["expiration"] = []byte(now.Format(time.RFC3339)) }),
			token: token, wantLog: "expired at"},
		{name: "unparseable expiration", store: goodSecret(func(s *bootstrap.Secret) { s.Data["expiration"] = []byte("tomorrow") }),
			token: token, wantLog: "unparseable expiration"},
		{name: "no usage", store: goodSecret(func(s *bootstrap.Secret) { delete(s.Data, "usage-bootstrap-authentication") }),
			token: token, wantLog: "not marked usage-bootstrap-authentication=true"},
		{name: "usage not exactly true", store: goodSecret(func(s *bootstrap.Secret) { s.Data["usage-bootstrap-authentication"] = []byte("True") }),
			token: token, wantLog: "not marked usage-bootstrap-authentication=true"},
		{name: "wrong type", store: goodSecret(func(s *bootstrap.Secret) { s.Type = "Opaque" }), token: token,
			wantLog: "not of type bootstrap.kubernetes.io/token"},
		{name: "no data", store: goodSecret(func(s *bootstrap.Secret) { s.Data = nil }), token: token,
			wantLog: "not of type bootstrap.kubernetes.io/token"},
		{name: "wrong namespace", store: goodSecret(func(s *bootstrap.Secret) { s.Namespace = "default" }), token: token,
			wantLog: "no secret for bootstrap token"},
		{name: "being deleted", store: goodSecret(func(s *bootstrap.Secret) { s.DeletionTimestamp = now.Add(-time.Second) }), token: token,
			wantLog: "being deleted"},
		{name: "extra groups", store: goodSecret(func(s *bootstrap.Secret) {
			s.Data["auth-extra-groups"] = []byte("system:bootstrappers:z,system:bootstrappers:kubeadm:default-node-token,system:bootstrappers:z")
		}), token: token,
			wantGroups: []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:bootstrappers:z"}},
		{name: "extra group of the longest length", store: goodSecret(func(s *bootstrap.Secret) {
			s.Data["auth-extra-groups"] = []byte("system:bootstrappers:" + strings.Repeat("a", 256))
		}), token: token, wantGroups: []string{"system:bootstrappers", "system:bootstrappers:" + strings.Repeat("a", 256)}},
		{name: "extra group repeats the default", store: goodSecret(func(s *bootstrap.Secret) { s.Data["auth-extra-groups"] = []byte("system:bootstrappers:x") }),
			token: token, wantGroups: []string{"system:bootstrappers", "system:bootstrappers:x"}},
	}
	for _, bad := range []string{
		"system:masters",
		"system:bootstrappers",
		"system:bootstrappers:",
		"system:bootstrappers:ends-with-",
		"system:bootstrappers:Upper",
		"system:bootstrappers:a b",
		"system:bootstrappers:ok,",
		"system:bootstrappers:ok, system:bootstrappers:space",
		"system:bootstrappers:ok,,system:bootstrappers:ok2",
		"system:bootstrappers:" + strings.Repeat("a", 257),
		"system:bootstrappers:x\n",
	} {
		tests = append(tests, struct {
			name       string
			store      store
			token      string
			wantGroups []string
			wantLog    string
		}{name: fmt.Sprintf("invalid extra groups %.40q", bad), store: goodSecret(func(s *bootstrap.Secret) { s.Data["auth-extra-groups"] = []byte(bad) }),
			token: token, wantLog: "auth-extra-groups"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			resp, ok, err := newAuthenticator(tt.store, &log).AuthenticateToken(context.Background(), tt.token)
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if tt.wantGroups == nil {
				if ok || resp != nil {
					t.Fatalf("got %+v, %v; want refused", resp, ok)
				}
				if !strings.Contains(log.String(), tt.wantLog) {
					t.Errorf("log = %q, want it to say %q", log.String(), tt.wantLog)
				}
				if strings.Contains(log.String(), tokenSecret) {
					t.Errorf("log %q holds the token secret", log.String())
				}
				return
			}
			if !ok || resp == nil {
				t.Fatalf("refused; log:\n%s", log.String())
			}
			if resp.User.Name != "system:bootstrap:"+tokenID || !slices.Equal(resp.User.Groups, tt.wantGroups) ||
				resp.User.UID != "" || resp.User.Extra != nil || resp.Authenticator != "bootstrap" || resp.Audiences != nil {
				t.Errorf("got %+v; want user system:bootstrap:%s, groups %v, authenticator bootstrap", resp, tokenID, tt.wantGroups)
			}
		})
	}
}

// Tokens not of the bootstrap form are not looked up at all.
func TestMalformedTokensAreNotMine_A10(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{
		"",
		".",
		tokenID,
		tokenID + ".",
		"." + tokenSecret,
		tokenID + tokenSecret,
		tokenID + ":" + tokenSecret,
		tokenID + "." + tokenSecret + "0",
		tokenID + "." + tokenSecret[:15],
		"abcde." + tokenSecret,
		"abcdefg." + tokenSecret,
		"ABCDEF." + tokenSecret,
		tokenID + ".0123456789ABCDEF",
		tokenID + ".0123456789abcde-",
		tokenID + ".0123456789abcde_",
		" " + token,
		token + " ",
		token + "\n",
		"Bearer " + token,
		tokenID + ".." + tokenSecret[:15],
		"abc.ef." + tokenSecret[:15],
		"abcdéf." + tokenSecret,
		tokenID + "." + tokenSecret[:14] + "é",
		"abcdef\x00" + tokenSecret,
		strings.Repeat("a", 1<<16),
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
	} {
		t.Run(fmt.Sprintf("%.30q", tok), func(t *testing.T) {
			t.Parallel()
			looked := false
			g := bootstrap.GetterFunc(func(context.Context, string, string) (bootstrap.Secret, error) {
				looked = true
				return bootstrap.Secret{}, errors.New("looked up")
			})
			var log bytes.Buffer
			resp, ok, err := newAuthenticator(g, &log).AuthenticateToken(context.Background(), tok)
			if resp != nil || ok || err != nil || looked {
				t.Errorf("got %+v, %v, %v, looked up %v; want (nil, false, nil) without a lookup", resp, ok, err, looked)
			}
		})
	}
}

// The Secret is looked up by its name in kube-system, and a lookup that
// fails for a reason other than "not found" is an error.
func TestLookupOfBootstrapSecret_A10(t *testing.T) {
	t.Parallel()
	var gotNS, gotName string
	boom := errors.New("store unavailable")
	g := bootstrap.GetterFunc(func(_ context.Context, ns, name string) (bootstrap.Secret, error) {
		gotNS, gotName = ns, name
		return bootstrap.Secret{}, boom
	})
	var log bytes.Buffer
	resp, ok, err := newAuthenticator(g, &log).AuthenticateToken(context.Background(), token)
	if resp != nil || ok || !errors.Is(err, boom) {
		t.Fatalf("got %+v, %v, %v; want (nil, false, %v)", resp, ok, err, boom)
	}
	if strings.Contains(err.Error(), tokenSecret) {
		t.Errorf("error %q holds the token secret", err)
	}
	if gotNS != "kube-system" || gotName != "bootstrap-token-"+tokenID {
		t.Errorf("looked up %s/%s, want kube-system/bootstrap-token-%s", gotNS, gotName, tokenID)
	}

	// A getter answering with another Secret is not believed.
	other := goodSecret(nil)["kube-system/bootstrap-token-"+tokenID]
	other.Name = "bootstrap-token-zzzzzz"
	g = func(context.Context, string, string) (bootstrap.Secret, error) { return other, nil }
	if resp, ok, err := newAuthenticator(g, &log).AuthenticateToken(context.Background(), token); resp != nil || ok || err != nil {
		t.Errorf("another secret: got %+v, %v, %v; want (nil, false, nil)", resp, ok, err)
	}
}

func TestGenerateToken_A10(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 200 {
		id, secret, err := bootstrap.GenerateToken()
		if err != nil {
			t.Fatal(err)
		}
		gotID, gotSecret, ok := bootstrap.ParseToken(id + "." + secret)
		if !ok || gotID != id || gotSecret != secret {
			t.Fatalf("generated %q.%q does not parse back", id, secret)
		}
		if seen[id+secret] {
			t.Fatalf("token %s generated twice", id)
		}
		seen[id+secret] = true
	}
}

// A token made from TokenSpec.Data authenticates, as kubeadm's does.
func TestTokenSpecData_A10(t *testing.T) {
	t.Parallel()
	spec := bootstrap.TokenSpec{ID: tokenID, Secret: tokenSecret, Description: "for node-1", Expires: now.Add(24 * time.Hour),
		Usages: bootstrap.Usages, Groups: []string{"system:bootstrappers:kubeadm:default-node-token"}}
	data := spec.Data()
	want := map[string]string{
		"token-id": tokenID, "token-secret": tokenSecret, "description": "for node-1", "expiration": "2026-11-27T12:00:00Z",
		"usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true",
		"auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
	}
	if len(data) != len(want) {
		t.Errorf("data has %d keys, want %d: %q", len(data), len(want), data)
	}
	for k, v := range want {
		if string(data[k]) != v {
			t.Errorf("data[%s] = %q, want %q", k, data[k], v)
		}
	}
	s := store{"kube-system/bootstrap-token-" + tokenID: {Namespace: "kube-system", Name: "bootstrap-token-" + tokenID, Type: bootstrap.SecretType, Data: data}}
	var log bytes.Buffer
	resp, ok, err := newAuthenticator(s, &log).AuthenticateToken(context.Background(), token)
	if !ok || err != nil || !slices.Equal(resp.User.Groups, []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token"}) {
		t.Fatalf("got %+v, %v, %v; log %s", resp, ok, err, log.String())
	}
	if _, ok := (bootstrap.TokenSpec{ID: tokenID, Secret: tokenSecret}).Data()["expiration"]; ok {
		t.Error("a spec without Expires has an expiration")
	}
}

func FuzzAuthenticateToken(f *testing.F) {
	f.Add(token, "system:bootstrappers:a", "2026-11-27T00:00:00Z")
	f.Add("abcdef.0123456789abcdeX", "", "x")
	f.Add("", ",", "")
	f.Fuzz(func(t *testing.T, tok, groups, exp string) {
		s := goodSecret(func(s *bootstrap.Secret) {
			s.Data["auth-extra-groups"] = []byte(groups)
			s.Data["expiration"] = []byte(exp)
		})
		var log bytes.Buffer
		resp, ok, err := newAuthenticator(s, &log).AuthenticateToken(context.Background(), tok)
		if err != nil {
			t.Fatalf("err = %v", err)
		}
		if ok && (tok != token || !strings.HasPrefix(resp.User.Name, "system:bootstrap:")) {
			t.Fatalf("token %q accepted as %+v", tok, resp)
		}
	})
}
