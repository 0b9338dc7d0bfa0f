package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/store"
)

// faultyStore fails or holds the calls on keys that contain "configmaps"
// while fault is set, as an etcd in trouble would.
type faultyStore struct {
	store.Store
	fault atomic.Pointer[func(ctx context.Context) error]
}

func (f *faultyStore) fail(ctx context.Context, key string) error {
	if fn := f.fault.Load(); fn != nil && strings.Contains(key, "configmaps") {
		return (*fn)(ctx)
	}
	return nil
}

func (f *faultyStore) set(fn func(ctx context.Context) error) { f.fault.Store(&fn) }

func (f *faultyStore) Get(ctx context.Context, key string) (store.KV, error) {
	if err := f.fail(ctx, key); err != nil {
		return store.KV{}, &store.KeyError{Op: "get", Key: key, Err: err}
	}
	return f.Store.Get(ctx, key)
}

func (f *faultyStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := f.fail(ctx, key); err != nil {
		return 0, &store.KeyError{Op: "create", Key: key, Err: err}
	}
	return f.Store.Create(ctx, key, value)
}

func (f *faultyStore) List(ctx context.Context, prefix string, opts store.ListOptions) (store.ListResult, error) {
	if err := f.fail(ctx, prefix); err != nil {
		return store.ListResult{}, err
	}
	return f.Store.List(ctx, prefix, opts)
}

func withFaultyStore(f *faultyStore) testOption {
	return func(c *Config) {
		f.Store = c.Store
		c.Store = f
	}
}

// answer is a response's status code and body.
func answer(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestRequestDeadline_J4: a request still running at its deadline is
// answered with kube-apiserver's 504, a client's shorter ?timeout= is
// kept, a bad one is kube's 400, and a watch has no deadline.
func TestRequestDeadline_J4(t *testing.T) {
	f := &faultyStore{}
	ts := newTestServer(t, withFaultyStore(f), func(c *Config) { c.RequestTimeout = time.Second })
	f.set(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }) // etcd never answers
	base := ts.http.URL + "/api/v1/namespaces/default/configmaps"

	// The timeout filter writes the Status as plain JSON, without kind.
	const timeout504 = `{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}`
	for _, tc := range []struct{ name, method, url, body string }{
		{"get", "GET", base + "/a", ""},
		{"list", "GET", base, ""},
		{"create", "POST", base, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, body := answer(t, tc.method, tc.url, tc.body)
			if code != http.StatusGatewayTimeout || strings.TrimSpace(body) != timeout504 {
				t.Errorf("answer = %d %s, want 504 %s", code, body, timeout504)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("answered after %v", took)
			}
		})
	}

	t.Run("a shorter timeout of the client's", func(t *testing.T) {
		f := &faultyStore{}
		slow := newTestServer(t, withFaultyStore(f), func(c *Config) { c.RequestTimeout = 10 * time.Minute })
		f.set(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		code, body := answer(t, "GET", slow.http.URL+"/api/v1/namespaces/default/configmaps/a?timeout=200ms", "")
		if code != http.StatusGatewayTimeout || strings.TrimSpace(body) != timeout504 {
			t.Errorf("answer = %d %s, want 504 %s", code, body, timeout504)
		}
	})

	t.Run("bad timeout", func(t *testing.T) {
		code, body := answer(t, "GET", base+"/a?timeout=soon", "")
		var st metav1.Status
		_ = json.Unmarshal([]byte(body), &st)
		want := `invalid timeout specified in the request URL - time: invalid duration "soon"`
		if code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || st.Message != want {
			t.Errorf("answer = %d %s, want 400 BadRequest %q", code, body, want)
		}
	})

	t.Run("watch has no deadline", func(t *testing.T) {
		f.set(func(context.Context) error { return nil })
		start := time.Now()
		code, _ := answer(t, "GET", base+"?watch=1&timeoutSeconds=2", "")
		if took := time.Since(start); code != http.StatusOK || took < 2*time.Second {
			t.Errorf("watch answered %d after %v, want 200 after its own 2s", code, took)
		}
	})
}
