package apiserver

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// labelSubresource, on a namespaced resource, writes another object
// through its Request: a POST labels the object named by its query's
// name, of the resource its query's resource names, or serves its body as
// an update of its own resource, as the finalize subresource does.
type labelSubresource struct{}

func (labelSubresource) Name() string                  { return "label" }
func (labelSubresource) Verbs() []string               { return []string{"create", "update"} }
func (labelSubresource) Kind() schema.GroupVersionKind { return schema.GroupVersionKind{} }
func (labelSubresource) Serve(req *Request) error {
	if req.Verb() == "update" {
		return req.ServeUpdate()
	}
	_, r := req.HTTP()
	gvr := corev1.SchemeGroupVersion.WithResource(r.URL.Query().Get("resource"))
	_, err := req.Update(gvr, r.URL.Query().Get("name"), "", "", func(old runtime.Object) (runtime.Object, error) {
		acc, _ := meta.Accessor(old)
		acc.SetLabels(map[string]string{"labelled": "yes"})
		return old, nil
	})
	if err != nil {
		return err
	}
	req.WriteCreated()
	return nil
}

// A subresource's write through Request.Update reaches a cluster-scoped
// object from a namespaced request, at its own key; a name that is not
// one path segment is kube's 400 and reaches nothing; and ServeUpdate
// serves only the resource's SpecSubresource, whose update rules the
// server knows (G.9), refusing any other.
func TestRequestWritesReachOnlyTheObjectNamed_G9(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		for _, r := range c.Resources {
			if r.GVR == corev1.SchemeGroupVersion.WithResource("configmaps") {
				r.Subresources = subresources(labelSubresource{})
			}
		}
	})
	cs := ts.clientset(t, false)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/namespaces/default/configmaps/c/label"
	if code, st := rawRequest(t, ts, "POST", path+"?resource=nodes&name=n1", "application/json", ""); code != http.StatusCreated {
		t.Errorf("label a node from a namespaced request: got %d %v, want 201", code, st)
	}
	if n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil || n.Labels["labelled"] != "yes" {
		t.Errorf("node after its labelling: %v, labels %v; want labelled", err, n.Labels)
	}
	if code, st := rawRequest(t, ts, "POST", path+"?resource=configmaps&name=kube-system%2Fc", "application/json", ""); code != http.StatusBadRequest {
		t.Errorf("label kube-system/c from default: got %d %v, want 400", code, st)
	}
	if cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "c", metav1.GetOptions{}); err != nil || cm.Labels["labelled"] != "" {
		t.Errorf("kube-system/c after a write from default: %v, labels %v; want none", err, cm.Labels)
	}
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"a":"b"}}`
	if code, st := rawRequest(t, ts, "PUT", path, "application/json", body); code != http.StatusInternalServerError {
		t.Errorf("ServeUpdate of a subresource that is not the SpecSubresource: got %d %v, want 500", code, st)
	}
	if cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{}); err != nil || len(cm.Data) != 0 {
		t.Errorf("default/c after a refused update: %v, data %v; want none", err, cm.Data)
	}
}
