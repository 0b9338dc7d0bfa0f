package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/replicaset"
	"github.com/kubegate/kubegate/internal/testwait"
)

// request is what the front of the API server saw of one request.
type request struct {
	method, path, auth, userAgent string
}

// tokenFront stands in front of the test API server: it issues the
// TokenRequest tokens itself (token-SA-N), refuses the tokens in
// revoked with a 401, and records every request.
type tokenFront struct {
	mu       sync.Mutex
	requests []request
	issued   map[string]int
	revoked  map[string]bool
	lifetime []int64 // the expirationSeconds asked for
	// refuseTokens answers every TokenRequest with a 500.
	refuseTokens bool
}

func (f *tokenFront) handler(t *testing.T, target string) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	const tokens = "/api/v1/namespaces/kube-system/serviceaccounts/"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		f.mu.Lock()
		f.requests = append(f.requests, request{r.Method, r.URL.Path, auth, r.UserAgent()})
		revoked := f.revoked[strings.TrimPrefix(auth, "Bearer ")]
		f.mu.Unlock()
		if revoked {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
			return
		}
		if sa, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, tokens), "/token"); ok && r.Method == "POST" && strings.HasPrefix(r.URL.Path, tokens) {
			if f.refuseTokens {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500}`, http.StatusInternalServerError)
				return
			}
			body, _ := io.ReadAll(r.Body)
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			tr, ok := obj.(*authenticationv1.TokenRequest)
			if err != nil || !ok || tr.Spec.ExpirationSeconds == nil {
				http.Error(w, "bad token request", http.StatusBadRequest)
				return
			}
			tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenRequest"
			f.mu.Lock()
			f.issued[sa]++
			f.lifetime = append(f.lifetime, *tr.Spec.ExpirationSeconds)
			tr.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%s-%d", sa, f.issued[sa]),
				ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(tr)
			return
		}
		proxy.ServeHTTP(w, r)
	})
}

// seen returns the requests that match.
func (f *tokenFront) seen(match func(request) bool) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.requests {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

func TestControllersWriteAsTheirServiceAccounts_G15(t *testing.T) {
	s := apiservertest.Start(t)
	front := &tokenFront{issued: map[string]int{}, revoked: map[string]bool{}}
	hs := httptest.NewServer(front.handler(t, s.Config.Host))
	t.Cleanup(hs.Close)
	// The manager's own identity, which the controllers must not use.
	cfg := &rest.Config{Host: hs.URL, QPS: -1, BearerToken: "manager-token"}
	apiservertest.Run(t, func(ctx context.Context) error {
		return Run(ctx, Options{Config: cfg, UseServiceAccountCredentials: true,
			Descriptors: []controllers.Descriptor{replicaset.Descriptor}})
	})

	ctx := context.Background()
	testwait.For(t, 30*time.Second, "service account kube-system/replicaset-controller", func() (bool, string) {
		_, err := s.Client.CoreV1().ServiceAccounts("kube-system").Get(ctx, "replicaset-controller", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	one := int32(1)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}}}
	if _, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podCreates := func() []request {
		return front.seen(func(r request) bool { return r.method == "POST" && r.path == "/api/v1/namespaces/default/pods" })
	}
	testwait.For(t, 30*time.Second, "the replica set's pod created", func() (bool, string) {
		return len(podCreates()) > 0, fmt.Sprint(front.seen(func(request) bool { return true }))
	})
	const user = "system:serviceaccount:kube-system:replicaset-controller"
	for _, r := range podCreates() {
		if r.auth != "Bearer token-replicaset-controller-1" || !strings.HasSuffix(r.userAgent, "/"+user) {
			t.Errorf("pod created with Authorization %q, User-Agent %q; want the service account's token and user agent", r.auth, r.userAgent)
		}
	}
	// The token was asked for with the manager's credentials, for an hour.
	front.mu.Lock()
	if len(front.lifetime) != 1 || front.lifetime[0] != 3600 {
		t.Errorf("tokens asked for %v seconds, want one for 3600", front.lifetime)
	}
	front.mu.Unlock()
	for _, r := range front.seen(func(r request) bool { return strings.HasSuffix(r.path, "/token") }) {
		if r.auth != "Bearer manager-token" || r.path != "/api/v1/namespaces/kube-system/serviceaccounts/replicaset-controller/token" {
			t.Errorf("token request %s with Authorization %q, want the manager's credentials for replicaset-controller", r.path, r.auth)
		}
	}
	// The shared informers read as the manager.
	watches := front.seen(func(r request) bool { return strings.HasSuffix(r.path, "/replicasets") && r.method == "GET" })
	if len(watches) == 0 {
		t.Fatal("no list or watch of replicasets seen")
	}
	for _, r := range watches {
		if r.auth != "Bearer manager-token" || !strings.HasSuffix(r.userAgent, "/shared-informers") {
			t.Errorf("informer request with Authorization %q, User-Agent %q; want the manager's", r.auth, r.userAgent)
		}
	}

	// A token the server stops accepting is replaced: after a 401 the
	// next write asks for and carries a new one.
	front.mu.Lock()
	front.revoked["token-replicaset-controller-1"] = true
	front.mu.Unlock()
	two := int32(3)
	testwait.For(t, 60*time.Second, "a pod created with a second token", func() (bool, string) {
		if cur, err := s.Client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{}); err == nil && *cur.Spec.Replicas != two {
			cur.Spec.Replicas = &two
			_, _ = s.Client.AppsV1().ReplicaSets("default").Update(ctx, cur, metav1.UpdateOptions{})
		}
		for _, r := range podCreates() {
			if r.auth == "Bearer token-replicaset-controller-2" {
				return true, ""
			}
		}
		return false, fmt.Sprint(podCreates())
	})
}

func TestControllersUseTheManagersIdentityByDefault_G15(t *testing.T) {
	s := apiservertest.Start(t)
	front := &tokenFront{issued: map[string]int{}, revoked: map[string]bool{}}
	hs := httptest.NewServer(front.handler(t, s.Config.Host))
	t.Cleanup(hs.Close)
	cfg := &rest.Config{Host: hs.URL, QPS: -1, BearerToken: "manager-token"}
	apiservertest.Run(t, func(ctx context.Context) error {
		return Run(ctx, Options{Config: cfg, Descriptors: []controllers.Descriptor{replicaset.Descriptor}})
	})
	ctx := context.Background()
	one := int32(1)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}}}
	if _, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var creates []request
	testwait.For(t, 30*time.Second, "the replica set's pod created", func() (bool, string) {
		creates = front.seen(func(r request) bool { return r.method == "POST" && r.path == "/api/v1/namespaces/default/pods" })
		return len(creates) > 0, ""
	})
	if r := creates[0]; r.auth != "Bearer manager-token" || !strings.HasSuffix(r.userAgent, "/replicaset-controller") {
		t.Errorf("pod created with Authorization %q, User-Agent %q; want the manager's token", r.auth, r.userAgent)
	}
	if n := len(front.seen(func(r request) bool { return strings.Contains(r.path, "/serviceaccounts") })); n != 0 {
		t.Errorf("%d service account requests without service-account credentials, want none", n)
	}
	if _, err := s.Client.CoreV1().ServiceAccounts("kube-system").Get(ctx, "replicaset-controller", metav1.GetOptions{}); err == nil {
		t.Error("service account kube-system/replicaset-controller created without service-account credentials")
	}
}

// A controller whose token requests the API server refuses is stopped
// with the manager: the wait before the next retry and any request under
// way end when the manager's context does, and Run returns long before
// the retries would have run out (G.15).
func TestStoppingEndsPendingTokenRequests_G15(t *testing.T) {
	defer func(d time.Duration) { tokenRetryDelay = d }(tokenRetryDelay)
	tokenRetryDelay = time.Hour // retries that would outlast the test
	s := apiservertest.Start(t)
	front := &tokenFront{issued: map[string]int{}, revoked: map[string]bool{}, refuseTokens: true}
	hs := httptest.NewServer(front.handler(t, s.Config.Host))
	t.Cleanup(hs.Close)
	cfg := &rest.Config{Host: hs.URL, QPS: -1, BearerToken: "manager-token"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: cfg, UseServiceAccountCredentials: true, Logger: slog.New(slog.DiscardHandler),
			Descriptors: []controllers.Descriptor{replicaset.Descriptor}})
	}()

	one := int32(1)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}}}
	if _, err := s.Client.AppsV1().ReplicaSets("default").Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "a token request refused", func() (bool, string) {
		n := len(front.seen(func(r request) bool { return strings.HasSuffix(r.path, "/token") }))
		return n > 0, "none yet"
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context was cancelled: a token request retry holds a controller")
	}
}
