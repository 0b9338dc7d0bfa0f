package apiserver

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// purgeSubresource is a subresource defined as those outside the package
// are, on Request's exported methods: a POST deletes its object.
type purgeSubresource struct{}

func (purgeSubresource) Name() string                  { return "purge" }
func (purgeSubresource) Verbs() []string               { return []string{"create"} }
func (purgeSubresource) Kind() schema.GroupVersionKind { return schema.GroupVersionKind{} }
func (purgeSubresource) Serve(req *Request) error {
	if err := req.Delete(req.Resource().GVR, req.Name(), &metav1.DeleteOptions{}); err != nil {
		return err
	}
	req.WriteCreated()
	return nil
}

// A subresource's writes through its Request are dry runs when the
// request asks one on its URL, as its verbs' are: Update and Delete
// alike, whatever options the subresource passes (an eviction's delete,
// D.9). A dryRun other than All is the request's 422.
func TestRequestDeleteHonoursTheRequestsDryRun_D9(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		for _, r := range c.Resources {
			if r.GVR == corev1.SchemeGroupVersion.WithResource("configmaps") {
				r.Subresources = subresources(purgeSubresource{})
			}
		}
	})
	cms := ts.clientset(t, false).CoreV1().ConfigMaps("default")
	ctx := context.Background()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/namespaces/default/configmaps/c/purge"
	for _, tt := range []struct {
		query string
		code  int
		gone  bool
	}{
		{"?dryRun=All", http.StatusCreated, false},
		{"?dryRun=Some", http.StatusUnprocessableEntity, false},
		{"", http.StatusCreated, true},
	} {
		if code, st := rawRequest(t, ts, "POST", path+tt.query, "application/json", ""); code != tt.code {
			t.Errorf("POST purge%s: got %d %v, want %d", tt.query, code, st, tt.code)
		}
		_, err := cms.Get(ctx, "c", metav1.GetOptions{})
		if gone := apierrors.IsNotFound(err); gone != tt.gone || err != nil && !gone {
			t.Errorf("after POST purge%s: get = %v, want gone %v", tt.query, err, tt.gone)
		}
	}
}
