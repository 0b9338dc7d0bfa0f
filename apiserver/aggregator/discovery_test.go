package aggregator

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
)

type fixedResolver struct{ u *url.URL }

func (r fixedResolver) ResolveEndpoint(string, string, int32) (*url.URL, error) {
	u := *r.u
	return &u, nil
}

// A remote group version's discovery is fetched again only when its own
// APIService changed or the last fetch is old (I.3): a sync caused by
// another APIService fetches nothing.
func TestDiscoveryIsFetchedAgainOnlyWhenItsAPIServiceChanges_I3(t *testing.T) {
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"example.com/v1","resources":[{"name":"widgets","kind":"Widget","namespaced":true,"verbs":["get"]}]}`)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c := newDiscoveryCache(fixedResolver{u}, slog.New(slog.DiscardHandler))
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	remote := func(rv string) *remoteService {
		return &remoteService{rt: http.DefaultTransport, api: &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: "v1.example.com", ResourceVersion: rv},
			Spec:       apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](443)}}}}
	}
	ctx := context.Background()
	for _, step := range []struct {
		rv     string
		maxAge time.Duration
		want   int32
	}{
		{"1", time.Hour, 1}, // first sight
		{"1", time.Hour, 1}, // the same APIService, fetched just now
		{"1", time.Hour, 1},
		{"2", time.Hour, 2}, // it changed
		{"2", 0, 3},         // the last fetch is too old
	} {
		c.refresh(ctx, gv, remote(step.rv), step.maxAge)
		c.wait()
		if got := fetches.Load(); got != step.want {
			t.Fatalf("after a sync of resourceVersion %s: %d fetches, want %d", step.rv, got, step.want)
		}
	}
	if d, ok := c.get(gv); !ok || len(d.Resources) != 1 || d.Resources[0].Resource != "widgets" {
		t.Errorf("cached discovery = %+v, %v", d, ok)
	}
}
