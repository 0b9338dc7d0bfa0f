package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/store"
)

// TestStoreFailures_J4: a failure of etcd is answered as kube-apiserver
// answered the same fault (docs J.4): 500, no reason, etcd's message, and
// neither the storage key nor etcd's address.
func TestStoreFailures_J4(t *testing.T) {
	f := &faultyStore{}
	ts := newTestServer(t, withFaultyStore(f))
	base := ts.http.URL + "/api/v1/namespaces/default/configmaps"
	detail := errors.New(`rpc error: code = Unavailable desc = connection error: dial tcp 127.0.0.1:2379: connect: connection refused`)
	requests := []struct{ name, method, url, body string }{
		{"get", "GET", base + "/a", ""},
		{"create", "POST", base, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`},
		{"list", "GET", base, ""},
	}
	for _, fault := range []struct {
		name string
		err  error
		want string
	}{
		{"no leader", &store.UnavailableError{Reason: "etcdserver: no leader", Err: detail}, "etcdserver: no leader"},
		{"timed out", &store.UnavailableError{Reason: "etcdserver: request timed out", Err: detail}, "etcdserver: request timed out"},
		{"unreachable", &store.UnavailableError{Reason: "context deadline exceeded", Err: detail}, "context deadline exceeded"},
		{"maybe applied", errors.Join(store.ErrMaybeApplied, detail), msgMaybeApplied},
	} {
		f.set(func(context.Context) error { return fault.err })
		for _, rq := range requests {
			t.Run(fault.name+"/"+rq.name, func(t *testing.T) {
				code, body := answer(t, rq.method, rq.url, rq.body)
				var st metav1.Status
				if err := json.Unmarshal([]byte(body), &st); err != nil {
					t.Fatalf("body %s: %v", body, err)
				}
				if code != http.StatusInternalServerError || st.Code != 500 || st.Reason != "" || st.Message != fault.want {
					t.Errorf("answer = %d %s, want 500 with no reason and message %q", code, body, fault.want)
				}
				for _, leak := range []string{"/registry", "configmaps/", "127.0.0.1"} {
					if strings.Contains(body, leak) {
						t.Errorf("answer %s names %q", body, leak)
					}
				}
			})
		}
	}
}

// TestWriteOutOfTime_J4: a write whose own deadline passes in the store is
// answered as kube-apiserver's write handlers answer it: 504, reason
// Timeout, "request did not complete within requested timeout".
func TestWriteOutOfTime_J4(t *testing.T) {
	f := &faultyStore{}
	ts := newTestServer(t, withFaultyStore(f))
	f.set(func(context.Context) error { return context.DeadlineExceeded })
	code, body := answer(t, "POST", ts.http.URL+"/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`)
	var st metav1.Status
	_ = json.Unmarshal([]byte(body), &st)
	const want = "Timeout: request did not complete within requested timeout - context deadline exceeded"
	if code != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout || st.Message != want || st.Kind != "Status" {
		t.Errorf("answer = %d %s, want 504 Timeout %q", code, body, want)
	}
}
