package webhook_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
	"github.com/kubegate/kubegate/authn/webhook"
)

const tokenReviewPath = "/apis/authentication.k8s.io/v1/tokenreviews"

// reviewServer is kubegate's API server answering TokenReviews, behind a
// proxy that counts the reviews it passes on.
type reviewServer struct {
	api     *apiservertest.Server
	url     string // of the proxy, with the TokenReview path
	reviews atomic.Int64
}

func startReviewServer(t *testing.T) *reviewServer {
	t.Helper()
	rs := &reviewServer{api: apiservertest.Start(t, apiservertest.WithTokenReviews())}
	target, err := url.Parse(rs.api.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == tokenReviewPath {
			rs.reviews.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ps.Close)
	rs.url = ps.URL + tokenReviewPath
	return rs
}

// token returns a bound token for a new service account named name in the
// default namespace, and the service account.
func (rs *reviewServer) token(t *testing.T, name string) (string, *corev1.ServiceAccount) {
	t.Helper()
	ctx := t.Context()
	sa, err := rs.api.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rs.api.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token, sa
}

// review asks the API server itself about token.
func (rs *reviewServer) review(t *testing.T, token string) authenticationv1.TokenReviewStatus {
	t.Helper()
	tr, err := rs.api.Client.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status
}

// writeKubeconfig writes a webhook configuration file naming server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["review"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["kubegate"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "review", AuthInfo: "kubegate"}
	cfg.CurrentContext = "webhook"
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// forgedToken is a service-account token for the default service account
// signed by a key the server does not know: the server reviews it with an
// error.
func forgedToken(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := serviceaccount.NewIssuer(key, serviceaccount.IssuerOptions{Issuer: apiservertest.TokenIssuer})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := iss.Issue(serviceaccount.TokenRequest{Namespace: "default", Name: "default", UID: "0d6f7e4c-1b7e-4c61-9f39-2f0e3d5b9a11", ExpirationSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

func TestGoodTokenAuthenticatesAsTheReviewSays_A9(t *testing.T) {
	t.Parallel()
	rs := startReviewServer(t)
	tok, sa := rs.token(t, "robot")
	want := rs.review(t, tok)
	if !want.Authenticated {
		t.Fatalf("the API server does not authenticate its own token: %+v", want)
	}
	a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, rs.url), Version: webhook.VersionV1, APIAudiences: []string{apiservertest.TokenIssuer}})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("without audiences", func(t *testing.T) {
		resp, ok, err := a.AuthenticateToken(t.Context(), tok)
		if !ok || err != nil {
			t.Fatalf("got (%v, %v), want success", ok, err)
		}
		u := resp.User
		if u.Name != "system:serviceaccount:default:robot" || u.UID != string(sa.UID) {
			t.Errorf("user %q uid %q, want system:serviceaccount:default:robot, %q", u.Name, u.UID, sa.UID)
		}
		if u.Name != want.User.Username || u.UID != want.User.UID || !slices.Equal(u.Groups, want.User.Groups) {
			t.Errorf("user %+v, want the review's %+v", u, want.User)
		}
		if !slices.Contains(u.Groups, "system:serviceaccounts:default") {
			t.Errorf("groups %q lack system:serviceaccounts:default", u.Groups)
		}
		if len(want.User.Extra[authn.CredentialIDKey]) == 0 {
			t.Fatalf("the review has no %s extra: %+v", authn.CredentialIDKey, want.User.Extra)
		}
		wantExtra := map[string][]string{}
		for k, v := range want.User.Extra {
			wantExtra[k] = v
		}
		if !reflect.DeepEqual(u.Extra, wantExtra) {
			t.Errorf("extra %v, want the review's %v", u.Extra, wantExtra)
		}
		if resp.Authenticator != "webhook" {
			t.Errorf("authenticator %q, want webhook", resp.Authenticator)
		}
		if resp.Audiences != nil {
			t.Errorf("audiences %q without audiences asked for, want none", resp.Audiences)
		}
	})

	t.Run("with the API audience", func(t *testing.T) {
		ctx := authn.WithAudiences(t.Context(), []string{"other", apiservertest.TokenIssuer})
		resp, ok, err := a.AuthenticateToken(ctx, tok)
		if !ok || err != nil {
			t.Fatalf("got (%v, %v), want success", ok, err)
		}
		if !slices.Equal(resp.Audiences, []string{apiservertest.TokenIssuer}) {
			t.Errorf("audiences %q, want the answer's [%q]", resp.Audiences, apiservertest.TokenIssuer)
		}
	})

	t.Run("with another audience", func(t *testing.T) {
		ctx := authn.WithAudiences(t.Context(), []string{"other"})
		if resp, ok, _ := a.AuthenticateToken(ctx, tok); ok {
			t.Fatalf("authenticated %+v for an audience the token lacks", resp)
		}
	})
}

func TestBadTokensAreRefused_A9(t *testing.T) {
	t.Parallel()
	rs := startReviewServer(t)
	a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, rs.url), Version: webhook.VersionV1})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("unknown", func(t *testing.T) {
		// Not a JWT: no authenticator of the server knows it, and the
		// review says so with kube-apiserver's error.
		const tok = "not-a-token-anyone-knows"
		resp, ok, err := a.AuthenticateToken(t.Context(), tok)
		if ok || resp != nil || err == nil || err.Error() != "invalid bearer token" {
			t.Fatalf("got (%v, %v, %v), want the review's error: invalid bearer token", resp, ok, err)
		}
	})
	t.Run("unauthenticated without an error", func(t *testing.T) {
		u, _ := fakeReviews(t, "authentication.k8s.io/v1", func(string) map[string]any { return map[string]any{"authenticated": false} })
		a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, u), Version: webhook.VersionV1})
		if err != nil {
			t.Fatal(err)
		}
		resp, ok, err := a.AuthenticateToken(t.Context(), "some-token")
		if ok || resp != nil || err != nil {
			t.Fatalf("got (%v, %v, %v), want (nil, false, nil)", resp, ok, err)
		}
	})
	t.Run("forged", func(t *testing.T) {
		tok := forgedToken(t)
		if st := rs.review(t, tok); st.Authenticated || st.Error == "" {
			t.Fatalf("the API server reviews a forged token as %+v, want an error", st)
		}
		resp, ok, err := a.AuthenticateToken(t.Context(), tok)
		if ok || resp != nil || err == nil {
			t.Fatalf("got (%v, %v, %v), want the review's error", resp, ok, err)
		}
		if strings.Contains(err.Error(), tok) {
			t.Fatalf("error %q holds the token", err)
		}
	})
}

func newFakeClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// cacheStep is one lookup of a cache test: the clock moves on, the token
// is looked up, and the reviews made so far are counted.
type cacheStep struct {
	advance     time.Duration
	token       string
	wantOK      bool
	wantErr     bool
	wantReviews int64 // in all, after the step
}

func runCacheSteps(t *testing.T, a authn.Token, clock *clocktesting.FakeClock, reviews *atomic.Int64, steps []cacheStep) {
	t.Helper()
	for i, s := range steps {
		clock.Step(s.advance)
		_, ok, err := a.AuthenticateToken(t.Context(), s.token)
		if ok != s.wantOK || (err != nil) != s.wantErr {
			t.Fatalf("step %d: got (%v, %v), want ok %v, error %v", i, ok, err, s.wantOK, s.wantErr)
		}
		if got := reviews.Load(); got != s.wantReviews {
			t.Fatalf("step %d: %d reviews in all, want %d", i, got, s.wantReviews)
		}
	}
}

func TestCacheTTLHoldsForSuccessesNotErrors_A9(t *testing.T) {
	t.Parallel()
	rs := startReviewServer(t)
	good, _ := rs.token(t, "cached")
	forged := forgedToken(t)
	const ttl = 2 * time.Minute
	clock := newFakeClock()
	a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, rs.url), Version: webhook.VersionV1, CacheTTL: ttl, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	runCacheSteps(t, a, clock, &rs.reviews, []cacheStep{
		{token: good, wantOK: true, wantReviews: 1},
		{advance: ttl - time.Second, token: good, wantOK: true, wantReviews: 1},
		{advance: time.Second, token: good, wantOK: true, wantReviews: 2},
		// kube-apiserver's reviews of bad tokens carry an error, and an
		// error is asked again every time.
		{token: forged, wantErr: true, wantReviews: 3},
		{token: forged, wantErr: true, wantReviews: 4},
		{token: "unknown", wantErr: true, wantReviews: 5},
		{token: "unknown", wantErr: true, wantReviews: 6},
		{token: good, wantOK: true, wantReviews: 6},
	})
}

func TestCacheTTLHoldsForFailures_A9(t *testing.T) {
	t.Parallel()
	// A service that answers "not authenticated" without an error.
	u, reviews := fakeReviews(t, "authentication.k8s.io/v1", func(token string) map[string]any {
		if token == "good" {
			return map[string]any{"authenticated": true, "user": map[string]any{"username": "jane"}}
		}
		return map[string]any{"authenticated": false}
	})
	const ttl = 2 * time.Second
	clock := newFakeClock()
	a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, u), Version: webhook.VersionV1, CacheTTL: ttl, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	runCacheSteps(t, a, clock, reviews, []cacheStep{
		{token: "bad", wantReviews: 1},
		{advance: ttl - time.Millisecond, token: "bad", wantReviews: 1},
		{advance: time.Millisecond, token: "bad", wantReviews: 2},
		{token: "good", wantOK: true, wantReviews: 3},
		{advance: ttl - time.Millisecond, token: "good", wantOK: true, wantReviews: 3},
		{advance: time.Millisecond, token: "good", wantOK: true, wantReviews: 4},
	})
}

func TestZeroCacheTTLReviewsEveryTime_A9(t *testing.T) {
	t.Parallel()
	rs := startReviewServer(t)
	good, _ := rs.token(t, "uncached")
	a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, rs.url), Version: webhook.VersionV1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, ok, err := a.AuthenticateToken(t.Context(), good); !ok || err != nil {
			t.Fatalf("lookup %d: (%v, %v), want success", i, ok, err)
		}
	}
	if got := rs.reviews.Load(); got != 3 {
		t.Fatalf("%d reviews, want 3", got)
	}
}

// closedURL returns a URL at which nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + tokenReviewPath
}

func TestWebhookDownFailsOnlyWebhookTokens_A9(t *testing.T) {
	t.Parallel()
	static, _, err := tokenfile.Parse(strings.NewReader("static-token-0123456789,alice,1000,\"team\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	wh, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, closedURL(t)), Version: webhook.VersionV1,
		CacheTTL: time.Minute, RetryBackoff: &wait.Backoff{Duration: time.Millisecond, Factor: 1.5, Steps: 5}})
	if err != nil {
		t.Fatal(err)
	}
	a := authn.New(authn.Config{StaticTokens: []authn.Token{static}, Tokens: []authn.Token{wh}, TokenCache: authn.DefaultCacheOptions()})
	ask := func(token string) (*authn.Response, bool, error) {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return a.AuthenticateRequest(r)
	}

	resp, ok, err := ask("static-token-0123456789")
	if !ok || err != nil || resp.User.Name != "alice" {
		t.Fatalf("static token: (%+v, %v, %v), want alice", resp, ok, err)
	}
	const tok = "webhook-token-9f8e7d6c5b4a"
	for i := range 2 {
		resp, ok, err = ask(tok)
		if ok || err == nil {
			t.Fatalf("webhook token, try %d: (%+v, %v, %v), want an error", i, resp, ok, err)
		}
		if strings.Contains(err.Error(), tok) {
			t.Fatalf("error %q holds the token", err)
		}
		if !strings.Contains(err.Error(), "connect") {
			t.Errorf("error %q does not say the service could not be reached", err)
		}
	}
}

// fakeReviews answers TokenReviews of version apiVersion with answer,
// after checking the request is of that version, at the URL it returns,
// and counts them.
func fakeReviews(t *testing.T, apiVersion string, answer func(token string) map[string]any) (string, *atomic.Int64) {
	t.Helper()
	var reviews atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reviews.Add(1)
		var req struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Spec       struct {
				Token string `json:"token"`
			} `json:"spec"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.APIVersion != apiVersion || req.Kind != "TokenReview" {
			http.Error(w, "unexpected review", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": apiVersion, "kind": "TokenReview", "status": answer(req.Spec.Token)})
	}))
	t.Cleanup(s.Close)
	return s.URL + "/authenticate", &reviews
}

func TestVersionV1beta1_A9(t *testing.T) {
	t.Parallel()
	u, _ := fakeReviews(t, "authentication.k8s.io/v1beta1", func(token string) map[string]any {
		if token != "beta-token" {
			return map[string]any{"authenticated": false}
		}
		return map[string]any{"authenticated": true, "user": map[string]any{
			"username": "jane", "uid": "42", "groups": []string{"devs"}, "extra": map[string][]string{"scopes": {"a", "b"}},
		}}
	})
	// The default version is v1beta1, as in kube-apiserver.
	a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, u)})
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := a.AuthenticateToken(t.Context(), "beta-token")
	if !ok || err != nil {
		t.Fatalf("got (%v, %v), want success", ok, err)
	}
	want := authn.User{Name: "jane", UID: "42", Groups: []string{"devs"}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	if !reflect.DeepEqual(resp.User, want) {
		t.Errorf("user %+v, want %+v", resp.User, want)
	}
	if _, ok, err := a.AuthenticateToken(t.Context(), "other"); ok || err != nil {
		t.Errorf("unknown token: (%v, %v), want (false, nil)", ok, err)
	}
}

func TestErrorsNeverHoldTheToken_A9(t *testing.T) {
	t.Parallel()
	// A service that quotes the token it was sent.
	u, _ := fakeReviews(t, "authentication.k8s.io/v1", func(token string) map[string]any {
		return map[string]any{"authenticated": false, "error": "token " + token + " is revoked"}
	})
	a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, u), Version: webhook.VersionV1})
	if err != nil {
		t.Fatal(err)
	}
	const tok = "secret-token-5a4b3c2d1e"
	_, ok, err := a.AuthenticateToken(t.Context(), tok)
	if ok || err == nil {
		t.Fatalf("got (%v, %v), want an error", ok, err)
	}
	if strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), "is revoked") {
		t.Fatalf("error %q: want the service's message without the token", err)
	}
}

func TestBadConfigurationIsOneClearError_A9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := writeFile(garbage, "clusters: [this is not a kubeconfig"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    webhook.Options
		want string
	}{
		{"no file", webhook.Options{}, "a webhook configuration file is required"},
		{"missing file", webhook.Options{ConfigFile: filepath.Join(dir, "nope")}, "nope"},
		{"not a kubeconfig", webhook.Options{ConfigFile: garbage}, "garbage"},
		{"bad version", webhook.Options{ConfigFile: writeKubeconfig(t, "https://example.invalid/authenticate"), Version: "v2"},
			`unsupported authentication webhook version "v2", supported versions are "v1", "v1beta1"`},
		{"no retries", webhook.Options{ConfigFile: writeKubeconfig(t, "https://example.invalid/authenticate"), RetryBackoff: &wait.Backoff{}},
			"number of webhook retry attempts must be greater than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webhook.New(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans several lines", err)
			}
		})
	}
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o600) }

func TestTransientFailuresAreRetriedOthersNot_A9(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		wantReviews int64
	}{
		{"500 is retried up to the backoff's steps", http.StatusInternalServerError, 4},
		{"429 is retried", http.StatusTooManyRequests, 4},
		{"403 is final", http.StatusForbidden, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var reviews atomic.Int64
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reviews.Add(1)
				http.Error(w, "no", tt.status)
			}))
			t.Cleanup(s.Close)
			a, err := webhook.New(webhook.Options{ConfigFile: writeKubeconfig(t, s.URL+"/authenticate"), Version: webhook.VersionV1,
				CacheTTL: time.Minute, RetryBackoff: &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 4}})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok, err := a.AuthenticateToken(t.Context(), "some-token"); ok || err == nil {
				t.Fatalf("got (%v, %v), want an error", ok, err)
			}
			if got := reviews.Load(); got != tt.wantReviews {
				t.Fatalf("%d reviews, want %d", got, tt.wantReviews)
			}
		})
	}
}
