package authentication

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
)

const issuer = "https://kubernetes.default.svc.cluster.local"

var (
	fixedNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	alice    = authn.User{Name: "alice", UID: "uid-a", Groups: []string{"devs", authn.AllAuthenticated},
		Extra: map[string][]string{"scopes": {"read", "write"}}}
)

// env is a Config over an in-memory set of objects.
type env struct {
	cfg     Config
	objects map[string]runtime.Object // "resource/namespace/name"
	sa      *serviceaccount.Authenticator
}

func newEnv(t *testing.T) *env {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return fixedNow }
	iss, err := serviceaccount.NewIssuer(key, serviceaccount.IssuerOptions{Issuer: issuer, ExtendExpiration: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{objects: map[string]runtime.Object{}}
	e.put("serviceaccounts", "default", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default", UID: "sa-uid"}})
	e.put("serviceaccounts", "default", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "builder", UID: "builder-uid"}})
	e.put("pods", "default", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app", UID: "pod-uid"},
		Spec: corev1.PodSpec{ServiceAccountName: "default", NodeName: "n1"}})
	e.put("nodes", "", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}})
	e.put("secrets", "default", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s", UID: "secret-uid"}})

	e.sa, err = serviceaccount.New(serviceaccount.Options{Issuers: []string{issuer}, Now: now, Getter: e.getter()}, []crypto.PublicKey{key.Public()})
	if err != nil {
		t.Fatal(err)
	}
	static, _, err := tokenfile.Parse(strings.NewReader("static-token,bob,uid-bob,\"ops\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = Config{
		Tokens:       authn.New(authn.Config{StaticTokens: []authn.Token{static}, Tokens: []authn.Token{e.sa}}),
		APIAudiences: []string{issuer},
		Issuer:       iss,
		Now:          now,
	}
	return e
}

func (e *env) put(resource, ns string, obj runtime.Object) {
	name := obj.(metav1.Object).GetName()
	e.objects[resource+"/"+ns+"/"+name] = obj
}

func (e *env) get(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	if obj, ok := e.objects[gvr.Resource+"/"+ns+"/"+name]; ok {
		return obj.DeepCopyObject(), nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (e *env) getter() serviceaccount.Getter {
	obj := func(o runtime.Object, err error) (serviceaccount.Object, error) {
		if err != nil {
			return serviceaccount.Object{}, serviceaccount.ErrNotFound
		}
		return serviceaccount.Object{UID: string(o.(metav1.Object).GetUID())}, nil
	}
	ctx := context.Background()
	return serviceaccount.GetterFuncs{
		ServiceAccount: func(_ context.Context, ns, name string) (serviceaccount.Object, error) {
			return obj(e.get(ctx, serviceAccountsGVR, ns, name))
		},
		Pod: func(_ context.Context, ns, name string) (serviceaccount.Object, error) {
			return obj(e.get(ctx, podsGVR, ns, name))
		},
		Node: func(_ context.Context, name string) (serviceaccount.Object, error) {
			return obj(e.get(ctx, nodesGVR, "", name))
		},
	}
}

func (e *env) create(t *testing.T, key string, u authn.User, ns, name string, obj runtime.Object) (runtime.Object, error) {
	t.Helper()
	c, ok := Creators(e.cfg)[key]
	if !ok {
		t.Fatalf("no creator for %s", key)
	}
	if got, want := reflect.TypeOf(c.New()), reflect.TypeOf(obj); got != want {
		t.Fatalf("%s New() = %v, want %v", key, got, want)
	}
	return c.Create(context.Background(), &apiserver.CreateRequest{Namespace: ns, Name: name, User: u, Object: obj, Get: e.get})
}

func wantStatus(t *testing.T, err error, code int32, msg string) {
	t.Helper()
	se, ok := err.(*apierrors.StatusError)
	if !ok {
		t.Fatalf("got %v (%T), want a %d StatusError", err, err, code)
	}
	if se.ErrStatus.Code != code || !strings.Contains(se.ErrStatus.Message, msg) {
		t.Fatalf("got %d %q, want %d containing %q", se.ErrStatus.Code, se.ErrStatus.Message, code, msg)
	}
}

func TestCreatorsDiscovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := map[string]struct {
		kind       string
		namespaced bool
	}{
		SelfSubjectReviewsKey: {"SelfSubjectReview", false},
		TokenReviewsKey:       {"TokenReview", false},
		TokenRequestKey:       {"TokenRequest", true},
	}
	got := Creators(e.cfg)
	if len(got) != len(want) {
		t.Fatalf("got %d creators, want %d", len(got), len(want))
	}
	for k, w := range want {
		c := got[k]
		if c == nil || c.Kind() != w.kind || c.Namespaced() != w.namespaced {
			t.Errorf("%s: got %v, want kind %s namespaced %v", k, c, w.kind, w.namespaced)
		}
	}
	if n := len(Creators(Config{})); n != 1 {
		t.Errorf("with nothing configured: got %d creators, want only selfsubjectreviews", n)
	}
}

func TestSelfSubjectReview(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	obj, err := e.create(t, SelfSubjectReviewsKey, alice, "", "", &authenticationv1.SelfSubjectReview{})
	if err != nil {
		t.Fatal(err)
	}
	ssr := obj.(*authenticationv1.SelfSubjectReview)
	ui := ssr.Status.UserInfo
	if ui.Username != "alice" || ui.UID != "uid-a" || !slices.Equal(ui.Groups, alice.Groups) ||
		!slices.Equal([]string(ui.Extra["scopes"]), []string{"read", "write"}) {
		t.Fatalf("userInfo: got %+v", ui)
	}
	if ssr.APIVersion != "authentication.k8s.io/v1" || ssr.Kind != "SelfSubjectReview" {
		t.Fatalf("type: got %s %s", ssr.APIVersion, ssr.Kind)
	}
}

func TestTokenReview(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	issue := func(auds ...string) string {
		tok, err := e.cfg.Issuer.Issue(serviceaccount.TokenRequest{Namespace: "default", Name: "default", UID: "sa-uid", Audiences: auds})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	tests := []struct {
		name     string
		spec     authenticationv1.TokenReviewSpec
		wantUser string
		wantAuds []string
		wantErr  string // in status.error
	}{
		{"static token", authenticationv1.TokenReviewSpec{Token: "static-token"}, "bob", []string{issuer}, ""},
		{"static token for another audience", authenticationv1.TokenReviewSpec{Token: "static-token", Audiences: []string{"vault"}}, "", nil, "is invalid for the target audiences"},
		{"service-account token", authenticationv1.TokenReviewSpec{Token: issue()}, "system:serviceaccount:default:default", []string{issuer}, ""},
		{"token for vault reviewed for vault", authenticationv1.TokenReviewSpec{Token: issue("vault"), Audiences: []string{"vault"}}, "system:serviceaccount:default:default", []string{"vault"}, ""},
		{"token for vault reviewed for the API", authenticationv1.TokenReviewSpec{Token: issue("vault")}, "", nil, "audiences"},
		{"unknown token", authenticationv1.TokenReviewSpec{Token: "nope"}, "", nil, "invalid bearer token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := e.create(t, TokenReviewsKey, alice, "", "", &authenticationv1.TokenReview{Spec: tt.spec})
			if err != nil {
				t.Fatal(err)
			}
			st := obj.(*authenticationv1.TokenReview).Status
			if st.Authenticated != (tt.wantUser != "") || st.User.Username != tt.wantUser {
				t.Fatalf("got authenticated %v user %q (error %q), want user %q", st.Authenticated, st.User.Username, st.Error, tt.wantUser)
			}
			if !slices.Equal(st.Audiences, tt.wantAuds) {
				t.Fatalf("audiences: got %q, want %q", st.Audiences, tt.wantAuds)
			}
			if !strings.Contains(st.Error, tt.wantErr) || (tt.wantErr == "" && st.Error != "") {
				t.Fatalf("error: got %q, want it to contain %q", st.Error, tt.wantErr)
			}
			if tt.wantUser != "" && !slices.Contains(st.User.Groups, authn.AllAuthenticated) {
				t.Fatalf("groups: got %q, want system:authenticated among them", st.User.Groups)
			}
			if strings.Contains(st.Error, tt.spec.Token) {
				t.Fatal("the error contains the token")
			}
		})
	}
	t.Run("empty token", func(t *testing.T) {
		_, err := e.create(t, TokenReviewsKey, alice, "", "", &authenticationv1.TokenReview{})
		wantStatus(t, err, http.StatusBadRequest, "token is required")
	})
}

func TestTokenRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	podRef := func(uid string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "app", UID: types.UID(uid)}
	}
	tests := []struct {
		name     string
		sa       string
		req      authenticationv1.TokenRequest
		wantCode int32
		wantMsg  string
		wantExp  int64
		wantAuds []string
		wantPod  string
		wantNode string
	}{
		{name: "defaults", sa: "default", wantExp: 3600, wantAuds: []string{issuer}},
		{name: "audience and duration", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{"vault", issuer}, ExpirationSeconds: ptr.To[int64](7200)}}, wantExp: 7200, wantAuds: []string{"vault", issuer}},
		{name: "bound to a pod", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("pod-uid")}},
			wantExp: 3600, wantAuds: []string{issuer}, wantPod: "app", wantNode: "n1"},
		{name: "body name matches", sa: "default", req: authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}},
			wantExp: 3600, wantAuds: []string{issuer}},
		{name: "missing service account", sa: "ghost", wantCode: http.StatusNotFound, wantMsg: `serviceaccounts "ghost" not found`},
		{name: "too short", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}},
			wantCode: http.StatusUnprocessableEntity, wantMsg: "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"},
		{name: "zero", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](0)}},
			wantCode: http.StatusUnprocessableEntity, wantMsg: "less than 10 minutes"},
		{name: "pod UID mismatch", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("old-uid")}},
			wantCode: http.StatusConflict, wantMsg: "does not match the UID in record"},
		{name: "pod of another account", sa: "builder", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("")}},
			wantCode: http.StatusBadRequest, wantMsg: "to pod running with different serviceaccount name"},
		{name: "missing pod", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "gone"}}},
			wantCode: http.StatusNotFound, wantMsg: `pods "gone" not found`},
		{name: "unbindable kind", sa: "default", req: authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "x"}}},
			wantCode: http.StatusBadRequest, wantMsg: "cannot bind token to object of type /v1, Kind=ConfigMap"},
		{name: "body name differs", sa: "default", req: authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
			wantCode: http.StatusUnprocessableEntity, wantMsg: "must match the service account name if specified"},
		{name: "service account made again", sa: "default", req: authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "stale-uid"}},
			wantCode: http.StatusConflict, wantMsg: "the UID in the token request (stale-uid) does not match the UID of the service account (sa-uid)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.req
			obj, err := e.create(t, TokenRequestKey, alice, "default", tt.sa, &in)
			if tt.wantCode != 0 {
				wantStatus(t, err, tt.wantCode, tt.wantMsg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := obj.(*authenticationv1.TokenRequest)
			if out.Status.Token == "" || *out.Spec.ExpirationSeconds != tt.wantExp || !slices.Equal(out.Spec.Audiences, tt.wantAuds) {
				t.Fatalf("got spec %+v, want %d s for %q", out.Spec, tt.wantExp, tt.wantAuds)
			}
			if want := fixedNow.Add(time.Duration(tt.wantExp) * time.Second); !out.Status.ExpirationTimestamp.Time.Equal(want) {
				t.Fatalf("expirationTimestamp: got %v, want %v", out.Status.ExpirationTimestamp, want)
			}
			if out.Name != tt.sa || out.Namespace != "default" || out.Kind != "TokenRequest" {
				t.Fatalf("metadata: got %s/%s kind %q", out.Namespace, out.Name, out.Kind)
			}
			// The token works with the server's authenticator, as the
			// service account, for the audiences it was issued for.
			resp, ok, err := e.sa.AuthenticateToken(authn.WithAudiences(context.Background(), tt.wantAuds), out.Status.Token)
			if err != nil || !ok {
				t.Fatalf("issued token refused: %v", err)
			}
			if resp.User.Name != "system:serviceaccount:default:"+tt.sa || resp.User.UID != "sa-uid" {
				t.Fatalf("token user: got %+v", resp.User)
			}
			if got := resp.User.Extra[serviceaccount.PodNameKey]; tt.wantPod != "" && !slices.Equal(got, []string{tt.wantPod}) {
				t.Fatalf("pod name extra: got %q, want %q", got, tt.wantPod)
			}
			if got := resp.User.Extra[serviceaccount.NodeNameKey]; tt.wantNode != "" && !slices.Equal(got, []string{tt.wantNode}) {
				t.Fatalf("node name extra: got %q, want %q", got, tt.wantNode)
			}
		})
	}
}
