package serviceaccount

import (
	"context"
	"crypto"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// fakeStore is a Getter over maps; a missing entry is ErrNotFound.
type fakeStore struct {
	sas, pods, nodes map[string]Object
	secrets          map[string]Secret
	calls            atomic.Int32
}

func (f *fakeStore) getter() Getter {
	get := func(m map[string]Object, key string) (Object, error) {
		f.calls.Add(1)
		if o, ok := m[key]; ok {
			return o, nil
		}
		return Object{}, ErrNotFound
	}
	return GetterFuncs{
		ServiceAccount: func(_ context.Context, ns, name string) (Object, error) { return get(f.sas, ns+"/"+name) },
		Pod:            func(_ context.Context, ns, name string) (Object, error) { return get(f.pods, ns+"/"+name) },
		Node:           func(_ context.Context, name string) (Object, error) { return get(f.nodes, name) },
		Secret: func(_ context.Context, ns, name string) (Secret, error) {
			f.calls.Add(1)
			if s, ok := f.secrets[ns+"/"+name]; ok {
				return s, nil
			}
			return Secret{}, ErrNotFound
		},
	}
}

func TestGetterBoundTokens(t *testing.T) {
	t.Parallel()
	k := testKeys()
	iss := newTestIssuer(t, k.p256)
	issue := func(req TokenRequest) string {
		t.Helper()
		req.Namespace, req.Name, req.UID = "ns1", "build", "sa-uid"
		res, err := iss.Issue(req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Token
	}
	plain := issue(TokenRequest{})
	pod := issue(TokenRequest{Pod: &ObjectRef{Name: "web-0", UID: "pod-uid"}, Node: &ObjectRef{Name: "node-1", UID: "node-uid"}})
	secret := issue(TokenRequest{Secret: &ObjectRef{Name: "s", UID: "secret-uid"}})
	node := issue(TokenRequest{Node: &ObjectRef{Name: "node-1", UID: "node-uid"}})

	recent := testNow.Add(-30 * time.Second)
	old := testNow.Add(-61 * time.Second)
	healthy := func() *fakeStore {
		return &fakeStore{
			sas:     map[string]Object{"ns1/build": {UID: "sa-uid"}},
			pods:    map[string]Object{"ns1/web-0": {UID: "pod-uid"}},
			secrets: map[string]Secret{"ns1/s": {Object: Object{UID: "secret-uid"}}},
			nodes:   map[string]Object{"node-1": {UID: "node-uid"}},
		}
	}
	tests := []struct {
		name    string
		token   string
		mutate  func(*fakeStore)
		wantErr string // "" means authenticated
	}{
		{name: "A.3 bound token with live objects", token: plain},
		{name: "A.3 the SA is always looked up: deleted SA", token: plain, mutate: func(f *fakeStore) { delete(f.sas, "ns1/build") },
			wantErr: "service account token has been invalidated: service account ns1/build: not found"},
		{name: "A.3 re-created SA (UID mismatch)", token: plain, mutate: func(f *fakeStore) { f.sas["ns1/build"] = Object{UID: "new-uid"} },
			wantErr: "service account UID (new-uid) does not match claim (sa-uid)"},
		{name: "A.3 SA deleted more than 60 s ago", token: plain, mutate: func(f *fakeStore) { f.sas["ns1/build"] = Object{UID: "sa-uid", DeletionTimestamp: old} },
			wantErr: "service account ns1/build has been deleted"},
		{name: "A.3 SA deleted less than 60 s ago is still valid", token: plain,
			mutate: func(f *fakeStore) { f.sas["ns1/build"] = Object{UID: "sa-uid", DeletionTimestamp: recent} }},
		{name: "A.3 pod-bound with live pod", token: pod},
		{name: "A.3 deleted pod invalidates the token", token: pod, mutate: func(f *fakeStore) { delete(f.pods, "ns1/web-0") },
			wantErr: "service account token has been invalidated: pod ns1/web-0"},
		{name: "A.3 re-created pod invalidates the token", token: pod, mutate: func(f *fakeStore) { f.pods["ns1/web-0"] = Object{UID: "other"} },
			wantErr: "pod UID (other) does not match claim (pod-uid)"},
		{name: "A.3 pod deleting for more than 60 s", token: pod, mutate: func(f *fakeStore) { f.pods["ns1/web-0"] = Object{UID: "pod-uid", DeletionTimestamp: old} },
			wantErr: "pod ns1/web-0 has been deleted"},
		{name: "A.3 pod-bound: the node is informational, not looked up", token: pod, mutate: func(f *fakeStore) { delete(f.nodes, "node-1") }},
		{name: "A.3 secret-bound with live secret", token: secret},
		{name: "A.3 deleted secret invalidates the token", token: secret, mutate: func(f *fakeStore) { delete(f.secrets, "ns1/s") },
			wantErr: "service account token has been invalidated: secret ns1/s"},
		{name: "A.3 re-created secret invalidates the token", token: secret, mutate: func(f *fakeStore) { f.secrets["ns1/s"] = Secret{Object: Object{UID: "x"}} },
			wantErr: "secret UID (x) does not match claim (secret-uid)"},
		{name: "A.3 secret deleting for more than 60 s", token: secret,
			mutate: func(f *fakeStore) {
				f.secrets["ns1/s"] = Secret{Object: Object{UID: "secret-uid", DeletionTimestamp: old}}
			},
			wantErr: "secret ns1/s has been deleted"},
		{name: "A.3 node-bound with live node", token: node},
		{name: "A.3 deleted node invalidates a node-bound token", token: node, mutate: func(f *fakeStore) { delete(f.nodes, "node-1") },
			wantErr: "service account token has been invalidated: node node-1"},
		{name: "A.3 re-created node invalidates a node-bound token", token: node, mutate: func(f *fakeStore) { f.nodes["node-1"] = Object{UID: "y"} },
			wantErr: "node UID (y) does not match claim (node-uid)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := healthy()
			if tt.mutate != nil {
				tt.mutate(store)
			}
			a := newTestAuthenticator(t, []crypto.PublicKey{k.p256.Public()}, func(o *Options) { o.Getter = store.getter() })
			resp, ok, err := a.AuthenticateToken(context.Background(), tt.token)
			assertNoSecret(t, err, tt.token)
			if tt.wantErr == "" {
				if !ok || err != nil {
					t.Fatalf("got ok=%v err=%v; want authenticated", ok, err)
				}
				if resp.User.Name != "system:serviceaccount:ns1:build" {
					t.Errorf("user = %q", resp.User.Name)
				}
				return
			}
			if ok || err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got ok=%v err=%v; want error containing %q", ok, err, tt.wantErr)
			}
		})
	}
}

func TestGetterLegacyTokens(t *testing.T) {
	t.Parallel()
	k := testKeys()
	iss := newTestIssuer(t, k.rsa)
	tok, err := iss.IssueLegacy("ns1", "build", "sa-uid", "build-token-abcde")
	if err != nil {
		t.Fatal(err)
	}
	healthy := func() *fakeStore {
		return &fakeStore{
			sas:     map[string]Object{"ns1/build": {UID: "sa-uid"}},
			secrets: map[string]Secret{"ns1/build-token-abcde": {Object: Object{UID: "s-uid"}, Token: []byte(tok)}},
		}
	}
	tests := []struct {
		name    string
		mutate  func(*fakeStore)
		skip    bool
		wantErr string
	}{
		{name: "A.3 legacy token with live secret and SA"},
		{name: "A.3 legacy: missing secret", mutate: func(f *fakeStore) { delete(f.secrets, "ns1/build-token-abcde") },
			wantErr: "service account token has been invalidated: secret ns1/build-token-abcde"},
		{name: "A.3 legacy: secret being deleted (no grace)", mutate: func(f *fakeStore) {
			s := f.secrets["ns1/build-token-abcde"]
			s.DeletionTimestamp = testNow
			f.secrets["ns1/build-token-abcde"] = s
		}, wantErr: "is being deleted"},
		{name: "A.3 legacy: token must equal the secret's copy", mutate: func(f *fakeStore) {
			s := f.secrets["ns1/build-token-abcde"]
			s.Token = []byte("rotated")
			f.secrets["ns1/build-token-abcde"] = s
		}, wantErr: "does not match the server's copy"},
		{name: "A.3 legacy: invalid-since label rejects the token", mutate: func(f *fakeStore) {
			s := f.secrets["ns1/build-token-abcde"]
			s.Labels = map[string]string{LegacyTokenInvalidSinceLabel: "2030-01-01"}
			f.secrets["ns1/build-token-abcde"] = s
		}, wantErr: "legacy-token-invalid-since"},
		{name: "A.3 legacy: missing SA", mutate: func(f *fakeStore) { delete(f.sas, "ns1/build") },
			wantErr: "service account ns1/build"},
		{name: "A.3 legacy: SA being deleted (no grace)", mutate: func(f *fakeStore) { f.sas["ns1/build"] = Object{UID: "sa-uid", DeletionTimestamp: testNow} },
			wantErr: "has been deleted"},
		{name: "A.3 legacy: re-created SA", mutate: func(f *fakeStore) { f.sas["ns1/build"] = Object{UID: "other"} },
			wantErr: "service account UID (other) does not match claim (sa-uid)"},
		{name: "A.3 legacy lookup off: a missing secret is not checked", skip: true, mutate: func(f *fakeStore) { delete(f.secrets, "ns1/build-token-abcde") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := healthy()
			if tt.mutate != nil {
				tt.mutate(store)
			}
			a := newTestAuthenticator(t, []crypto.PublicKey{k.rsa.Public()}, func(o *Options) {
				o.Getter = store.getter()
				o.SkipLegacyLookup = tt.skip
			})
			_, ok, err := a.AuthenticateToken(context.Background(), tok)
			assertNoSecret(t, err, tok)
			if tt.wantErr == "" {
				if !ok || err != nil {
					t.Fatalf("got ok=%v err=%v; want authenticated", ok, err)
				}
				if tt.skip && store.calls.Load() != 0 {
					t.Errorf("Getter called %d times with legacy lookup off", store.calls.Load())
				}
				return
			}
			if ok || err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got ok=%v err=%v; want error containing %q", ok, err, tt.wantErr)
			}
		})
	}
}

func TestGetterNotCalledForBadTokens(t *testing.T) {
	t.Parallel()
	k := testKeys()
	store := &fakeStore{}
	a := newTestAuthenticator(t, []crypto.PublicKey{k.p256.Public()}, func(o *Options) { o.Getter = store.getter() })
	forged := signRaw(t, jwt.SigningMethodES256, k.p256b, boundClaims(), nil)
	if _, ok, err := a.AuthenticateToken(context.Background(), forged); ok || err == nil {
		t.Fatalf("forged token: ok=%v err=%v", ok, err)
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("Getter called %d times for a token with a bad signature, want 0", n)
	}
}

func TestGetterFuncsNilIsNotFound(t *testing.T) {
	t.Parallel()
	var g GetterFuncs
	ctx := context.Background()
	_, e1 := g.GetServiceAccount(ctx, "a", "b")
	_, e2 := g.GetPod(ctx, "a", "b")
	_, e3 := g.GetSecret(ctx, "a", "b")
	_, e4 := g.GetNode(ctx, "a")
	for i, err := range []error{e1, e2, e3, e4} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("method %d: error = %v, want ErrNotFound", i, err)
		}
	}
}
