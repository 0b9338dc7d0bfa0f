package apiserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// tableRows answers path as a Table: from a LIST or GET its rows, from a
// watch those of its first event, read before the stream is closed.
func tableRows(t *testing.T, ts *testServer, path string) []metav1.TableRow {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.http.URL+path, nil)
	req.Header.Set("Accept", tableAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b.String())
	}
	var table metav1.Table
	if strings.Contains(path, "watch=1") {
		var ev metav1.WatchEvent
		if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&ev); err != nil {
			t.Fatalf("GET %s: first event: %v", path, err)
		}
		if err := json.Unmarshal(ev.Object.Raw, &table); err != nil {
			t.Fatalf("GET %s: event %s: %v", path, ev.Object.Raw, err)
		}
	} else if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("GET %s: %s %s, want meta.k8s.io/v1 Table", path, table.APIVersion, table.Kind)
	}
	return table.Rows
}

// TestTableIncludeObject_B5 holds every row of a Table, from a LIST, a GET
// and a watch, to the includeObject asked for: no object for None, the
// PartialObjectMetadata for Metadata and by default, and for Object the
// object as a GET answers it, apiVersion and kind included, which kubectl
// needs to decode it and sort by its fields (get --sort-by), also when a
// LIST takes it from the item cache. Roles have kube's default columns and
// the same objects.
func TestTableIncludeObject_B5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	send(t, ts, http.MethodPost, "/api/v1/namespaces", "application/json", `{"metadata":{"name":"t"}}`)
	send(t, ts, http.MethodPost, "/api/v1/namespaces/t/pods", "application/json", string(mustJSON(testPod("app"))))
	send(t, ts, http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/namespaces/t/roles", "application/json",
		`{"metadata":{"name":"app"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`)

	for _, kind := range []struct{ collection, name, apiVersion, kind string }{
		{"/api/v1/namespaces/t/pods", "Pod", "v1", "Pod"},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/t/roles", "Role", "rbac.authorization.k8s.io/v1", "Role"},
	} {
		code, _, whole := get(t, ts.http.URL+kind.collection+"/app", "application/json")
		if code != http.StatusOK {
			t.Fatalf("GET %s/app: %d %s", kind.collection, code, whole)
		}
		whole = bytes.TrimSuffix(whole, []byte("\n"))
		for _, read := range []struct{ name, path string }{
			{"list", kind.collection + "?"},
			// the item cache holds the objects the last LIST encoded
			{"list-again", kind.collection + "?"},
			{"get", kind.collection + "/app?"},
			{"watch", kind.collection + "?watch=1&"},
		} {
			for _, include := range []string{"", "None", "Metadata", "Object"} {
				path := read.path + "includeObject=" + include
				t.Run(kind.name+"/"+read.name+"/"+include, func(t *testing.T) {
					rows := tableRows(t, ts, path)
					if len(rows) != 1 {
						t.Fatalf("%d rows, want 1", len(rows))
					}
					raw := rows[0].Object.Raw
					switch include {
					case "None":
						if raw != nil && string(raw) != "null" {
							t.Errorf("object %s, want none", raw)
						}
					case "", "Metadata":
						var pm metav1.PartialObjectMetadata
						if err := json.Unmarshal(raw, &pm); err != nil || pm.APIVersion != "meta.k8s.io/v1" || pm.Kind != "PartialObjectMetadata" || pm.Name != "app" {
							t.Errorf("object %s (%v), want the PartialObjectMetadata of app", raw, err)
						}
						if bytes.Contains(raw, []byte(`"spec"`)) || bytes.Contains(raw, []byte(`"rules"`)) {
							t.Errorf("object %s, want only metadata", raw)
						}
					case "Object":
						if !bytes.Equal(raw, whole) {
							t.Errorf("object\n%s\nwant the GET answer\n%s", raw, whole)
						}
						obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, raw)
						if err != nil {
							t.Fatalf("kubectl's decoding: %v", err)
						}
						u := obj.(*unstructured.Unstructured)
						if u.GetAPIVersion() != kind.apiVersion || u.GetKind() != kind.kind || u.GetName() != "app" {
							t.Errorf("object %s %s %s, want %s %s app", u.GetAPIVersion(), u.GetKind(), u.GetName(), kind.apiVersion, kind.kind)
						}
					}
				})
			}
		}
	}
}

// TestTableIncludeObjectRefused_B5 holds an includeObject kube does not
// know to kube-apiserver's 400, on a LIST, a GET and a watch.
func TestTableIncludeObjectRefused_B5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	send(t, ts, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"one"}}`)
	const want = `Unable to convert to Table as requested: includeObject: Invalid value: "object": must be 'Metadata', 'Object', 'None', or empty`
	for _, path := range []string{
		"/api/v1/namespaces/default/configmaps?includeObject=object",
		"/api/v1/namespaces/default/configmaps/one?includeObject=object",
		"/api/v1/namespaces/default/configmaps?watch=1&includeObject=object",
	} {
		t.Run(path, func(t *testing.T) {
			code, _, body := get(t, ts.http.URL+path, tableAccept)
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatalf("%d %s: %v", code, body, err)
			}
			if code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || st.Message != want {
				t.Errorf("got %d %s %q, want 400 BadRequest %q", code, st.Reason, st.Message, want)
			}
		})
	}
}
