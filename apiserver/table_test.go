package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// getTable GETs path from ts as kubectl get does, as a Table.
func getTable(t *testing.T, ts *testServer, path string) *metav1.Table {
	t.Helper()
	code, _, body := get(t, ts.http.URL+path, tableAccept)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return &table
}

// send writes a JSON object with method to path and fails the test unless
// the server accepts it.
func send(t *testing.T, ts *testServer, method, path, contentType, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b.String())
	}
}

// TestTableColumnsAreKubes compares the column definitions of every
// resource with those a kube-apiserver v1.37.2 gave (testdata/
// table-columns.sh wrote them): names, types, formats, priorities and the
// descriptions, which come from the API documentation.
func TestTableColumnsAreKubes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/table-columns.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]metav1.TableColumnDefinition
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t)
	for path, cols := range want {
		t.Run(path, func(t *testing.T) {
			got := getTable(t, ts, path).ColumnDefinitions
			if len(got) != len(cols) {
				t.Fatalf("%d columns %v, want %d %v", len(got), got, len(cols), cols)
			}
			for i := range cols {
				if got[i] != cols[i] {
					t.Errorf("column %d:\n got %+v\nwant %+v", i, got[i], cols[i])
				}
			}
		})
	}
}

// tableNow is the test server's clock in TestTableCells: objects it creates
// are 0s old, and the events' fixed times are hours before it.
var tableNow = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// TestTableCells checks the cells of the RBAC and apps kinds (the core
// group's are checked in apiserver/registry/core), as a kube-apiserver
// v1.37.2 gave them for the same objects: numbers where kube puts numbers,
// the wide columns included, and "*" where the value is the server's
// choice. Rows are in name order.
func TestTableCells(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.Now = func() time.Time { return tableNow } })
	const j = "application/json"
	for _, o := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"metadata":{"name":"t"}}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/t/roles", `{"metadata":{"name":"reader"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/t/rolebindings", `{"metadata":{"name":"everyone"},
			"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},"subjects":[
			{"kind":"User","name":"alice","apiGroup":"rbac.authorization.k8s.io"},{"kind":"User","name":"bob","apiGroup":"rbac.authorization.k8s.io"},
			{"kind":"Group","name":"devs","apiGroup":"rbac.authorization.k8s.io"},
			{"kind":"ServiceAccount","name":"robot","namespace":"t"},{"kind":"ServiceAccount","name":"other","namespace":"kube-system"}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/t/rolebindings", `{"metadata":{"name":"nobody"},
			"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"t-reader"}}`},
		{"/apis/apps/v1/namespaces/t/replicasets", `{"metadata":{"name":"rs"},"spec":{"replicas":2,
			"selector":{"matchLabels":{"app":"rs"},"matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]}]},
			"template":{"metadata":{"labels":{"app":"rs","tier":"a"}},"spec":{"containers":[{"name":"a","image":"nginx"}]}}}}`},
		{"/apis/apps/v1/namespaces/t/statefulsets", `{"metadata":{"name":"sts"},"spec":{"replicas":4,"serviceName":"headless",
			"selector":{"matchLabels":{"app":"sts"}},"template":{"metadata":{"labels":{"app":"sts"}},
			"spec":{"containers":[{"name":"db","image":"postgres"},{"name":"side","image":"busybox"}]}}}}`},
	} {
		send(t, ts, http.MethodPost, o.path, j, o.body)
	}

	for _, tc := range []struct {
		name, path string
		want       []string // each row's cells as JSON
	}{
		{"roles show their creation date", "/apis/rbac.authorization.k8s.io/v1/namespaces/t/roles", []string{`["reader","2026-03-01T00:00:00Z"]`}},
		{"a single role", "/apis/rbac.authorization.k8s.io/v1/namespaces/t/roles/reader", []string{`["reader","2026-03-01T00:00:00Z"]`}},
		{"role bindings", "/apis/rbac.authorization.k8s.io/v1/namespaces/t/rolebindings", []string{
			`["everyone","Role/reader","0s","alice, bob","devs","t/robot, kube-system/other"]`,
			`["nobody","ClusterRole/t-reader","0s","","",""]`}},
		{"replica sets", "/apis/apps/v1/namespaces/t/replicasets", []string{
			`["rs",2,0,0,"0s","a","nginx","app=rs,tier in (a,b)"]`}},
		{"stateful sets", "/apis/apps/v1/namespaces/t/statefulsets", []string{`["sts","0/4","0s","db,side","postgres,busybox"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := getTable(t, ts, tc.path)
			if len(table.Rows) != len(tc.want) {
				t.Fatalf("%d rows, want %d", len(table.Rows), len(tc.want))
			}
			for i, row := range table.Rows {
				var want []any
				if err := json.Unmarshal([]byte(tc.want[i]), &want); err != nil {
					t.Fatal(err)
				}
				if len(row.Cells) != len(want) {
					t.Errorf("row %d = %v, want %s", i, row.Cells, tc.want[i])
					continue
				}
				for c := range want {
					if want[c] != "*" && row.Cells[c] != want[c] {
						t.Errorf("row %d = %v, want %s", i, row.Cells, tc.want[i])
						break
					}
				}
			}
		})
	}

}
