package apiserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// get sends a GET of path to the test server and returns the answer's body,
// decompressed, and its Content-Encoding.
func (ts *testServer) get(t *testing.T, path, accept, encoding string) ([]byte, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.http.URL+path, nil)
	req.Header.Set("Accept", accept)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	resp, err := ts.http.Client().Transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if body, err = gzip.NewReader(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	data, err := io.ReadAll(body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s (%s): %d %v %s", path, accept, resp.StatusCode, err, data)
	}
	return data, resp.Header.Get("Content-Encoding")
}

// LISTs are sent from the store one object at a time: protobuf from the
// stored encodings without decoding them, JSON decoding one object at a
// time. Each answer is byte for byte what the serializer writes for the
// decoded list, and each item is the object a GET reads.
func TestListFromStoreMatchesSerializer(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cs := ts.clientset(t, false)
	for i := range 5 {
		pod := testPod(fmt.Sprint("p", i))
		pod.Labels = map[string]string{"n": fmt.Sprint(i % 2)}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "<v&>"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first, _ := ts.get(t, "/api/v1/namespaces/default/pods?limit=2", "application/json", "")
	var page corev1.PodList
	if _, _, err := ts.json.Serializer.Decode(first, nil, &page); err != nil || page.Continue == "" || page.RemainingItemCount == nil {
		t.Fatalf("first page: %v, continue %q, remaining %v", err, page.Continue, page.RemainingItemCount)
	}

	for _, tc := range []struct{ path, resource string }{
		{"/api/v1/namespaces/default/pods", "pods"},
		{"/api/v1/pods", "pods"},
		{"/api/v1/namespaces/default/pods?limit=2", "pods"},
		{"/api/v1/namespaces/default/pods?limit=2&continue=" + page.Continue, "pods"},
		{"/api/v1/namespaces/default/pods?labelSelector=n%3D1", "pods"},
		{"/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dp3", "pods"},
		{"/api/v1/namespaces/empty/pods", "pods"},
		{"/api/v1/namespaces/default/configmaps", "configmaps"},
		{"/api/v1/namespaces", "namespaces"},
	} {
		path := tc.path
		t.Run(path, func(t *testing.T) {
			data, _ := ts.get(t, path, "application/json", "")
			list, _, err := ts.json.Serializer.Decode(data, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				ser  runtime.Serializer
				got  []byte
				name string
			}{{ts.json.Serializer, data, "JSON"}, {ts.protobuf.Serializer, nil, "protobuf"}} {
				if f.got == nil {
					f.got, _ = ts.get(t, path, mediaProtobuf, "")
				}
				var want bytes.Buffer
				if err := f.ser.Encode(list, &want); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(f.got, want.Bytes()) {
					t.Errorf("%s: the list sent from the store differs from the serializer's:\n got %q\nwant %q", f.name, f.got, want.Bytes())
				}
			}
			err = meta.EachListItem(list, func(item runtime.Object) error {
				acc, _ := meta.Accessor(item)
				one := "/api/v1/namespaces/" + acc.GetName()
				if acc.GetNamespace() != "" {
					one = "/api/v1/namespaces/" + acc.GetNamespace() + "/" + tc.resource + "/" + acc.GetName()
				}
				data, _ := ts.get(t, one, "application/json", "")
				got, _, err := ts.json.Serializer.Decode(data, nil, nil)
				if err != nil {
					return err
				}
				got.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
				if !apiequality.Semantic.DeepEqual(got, item) {
					t.Errorf("item %s is not what GET %s reads:\n got %+v\nwant %+v", acc.GetName(), one, item, got)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A value stored as JSON, by an earlier version, makes the LIST decode
// the page, and the answer is the same.
func TestProtobufListOfJSONStoredValue(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	if _, err := ts.clientset(t, false).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	legacy := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"default","uid":"u1","creationTimestamp":"2030-01-02T03:04:05Z"},"data":{"k":"v"}}`
	if _, err := ts.store.Create(ctx, Key(corev1.SchemeGroupVersion.WithResource("configmaps"), "default", "b"), []byte(legacy)); err != nil {
		t.Fatal(err)
	}
	data, _ := ts.get(t, "/api/v1/namespaces/default/configmaps", mediaProtobuf, "")
	obj, _, err := ts.protobuf.Serializer.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, ok := obj.(*corev1.ConfigMapList)
	if !ok || len(list.Items) != 2 || list.Items[1].Name != "b" || list.Items[1].Data["k"] != "v" || list.Items[1].ResourceVersion == "" {
		t.Fatalf("got %#v, want configmaps a and b, b with its data and resourceVersion", obj)
	}
}

// A LIST over 128 KiB is gzip-encoded for a client that accepts it, in
// JSON and in protobuf, now that both are written one item at a time; a
// small one is not (B.1).
func TestStreamedListGzip_B1(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.clientset(t, false).CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "small"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, accept := range []string{"application/json", mediaProtobuf} {
		if _, enc := ts.get(t, "/api/v1/namespaces/default/configmaps", accept, "gzip"); enc != "" {
			t.Errorf("%s: a small list came %s-encoded", accept, enc)
		}
	}
	big := strings.Repeat("x", 40<<10)
	for i := range 4 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("big", i)},
			Data: map[string]string{"k": big}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, accept := range []string{"application/json", mediaProtobuf} {
		data, enc := ts.get(t, "/api/v1/namespaces/default/configmaps", accept, "gzip")
		if enc != "gzip" {
			t.Errorf("%s: a %d-byte list came with Content-Encoding %q, want gzip", accept, len(data), enc)
		}
		ser := ts.json.Serializer
		if accept == mediaProtobuf {
			ser = ts.protobuf.Serializer
		}
		obj, _, err := ser.Decode(data, nil, nil)
		if list, ok := obj.(*corev1.ConfigMapList); err != nil || !ok || len(list.Items) != 5 {
			t.Errorf("%s: decoded %T (%v), want a ConfigMapList of 5", accept, obj, err)
		}
	}
}

// A JSON list of many runs of objects, encoded on several goroutines,
// holds them in the store's order, as the protobuf list does.
func TestJSONListOfManyRunsKeepsOrder(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.clientset(t, true).CoreV1().ConfigMaps("default")
	const n = 5*listRun + 3
	for i := range n {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%04d", i)},
			Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var lists [2]corev1.ConfigMapList
	for i, f := range []struct {
		accept string
		ser    runtime.Serializer
	}{{"application/json", ts.json.Serializer}, {mediaProtobuf, ts.protobuf.Serializer}} {
		data, _ := ts.get(t, "/api/v1/namespaces/default/configmaps", f.accept, "gzip")
		if _, _, err := f.ser.Decode(data, nil, &lists[i]); err != nil {
			t.Fatalf("%s: %v", f.accept, err)
		}
	}
	if len(lists[0].Items) != n {
		t.Fatalf("got %d items, want %d", len(lists[0].Items), n)
	}
	for i, cm := range lists[0].Items {
		if want := fmt.Sprintf("c%04d", i); cm.Name != want || cm.Data["i"] != fmt.Sprint(i) {
			t.Fatalf("item %d is %s (data %v), want %s", i, cm.Name, cm.Data, want)
		}
	}
	lists[0].TypeMeta, lists[1].TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	if !apiequality.Semantic.DeepEqual(lists[0], lists[1]) {
		t.Errorf("the JSON and protobuf lists differ")
	}
}

// A stored object that does not decode makes a JSON LIST the error it
// makes a GET, while nothing of the answer is sent; once part of it is,
// the response is broken off, never ended as a whole 200.
func TestJSONListOfUndecodableObject(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.clientset(t, false).CoreV1().ConfigMaps("default")
	put := func(name string) {
		bad := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"default"},"data":5}`
		if _, err := ts.store.Create(ctx, Key(corev1.SchemeGroupVersion.WithResource("configmaps"), "default", name), []byte(bad)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	put("b")
	list := func() (int, error) {
		req, _ := http.NewRequest(http.MethodGet, ts.http.URL+"/api/v1/namespaces/default/configmaps", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := ts.http.Client().Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return resp.StatusCode, err
	}
	if code, err := list(); code != http.StatusInternalServerError || err != nil {
		t.Errorf("small list: %d (%v), want 500 with its Status", code, err)
	}
	big := strings.Repeat("x", 2<<10)
	for i := range 200 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%03d", i)},
			Data: map[string]string{"k": big}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("zz")
	if code, err := list(); err == nil && code == http.StatusOK {
		t.Errorf("a list cut by an undecodable object was read whole with 200")
	}
}
