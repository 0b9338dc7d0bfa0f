// Package registrytest holds the checks the tests of the API groups in
// apiserver/registry/<group> make against a server started with
// apiserver/apiservertest: raw requests, a kind's Table rows and a 422's
// Status, each compared with what kube-apiserver answers.
package registrytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
)

// TableAccept asks for a Table, as kubectl get does.
const TableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// Do sends body (JSON, or a merge patch on PATCH) with method to path on
// srv, with header's fields, and returns the answer's status and body.
func Do(t testing.TB, srv *apiservertest.Server, method, path, body string, header map[string]string) (int, []byte) {
	t.Helper()
	code, _, data := DoHeader(t, srv, method, path, body, header)
	return code, data
}

// DoHeader is Do that returns the answer's header too, for what a server
// says beside the body: its Warning and Retry-After fields.
func DoHeader(t testing.TB, srv *apiservertest.Server, method, path, body string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	client, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, srv.Config.Host+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// Create posts each JSON object to its path and fails the test unless the
// server creates it.
func Create(t testing.TB, srv *apiservertest.Server, objects ...[2]string) {
	t.Helper()
	for _, o := range objects {
		if code, body := Do(t, srv, http.MethodPost, o[0], o[1], nil); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", o[0], code, body)
		}
	}
}

// Rows gets path as a Table and returns each row's cells as JSON. An Age
// under a minute reads "0s": a test's objects are that new, and a second
// may pass between their create and the list on a loaded machine.
func Rows(t testing.TB, srv *apiservertest.Server, path string) []string {
	t.Helper()
	code, body := Do(t, srv, http.MethodGet, path, "", map[string]string{"Accept": TableAccept})
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	rows := make([]string, len(table.Rows))
	for i, row := range table.Rows {
		for c, col := range table.ColumnDefinitions {
			if c >= len(row.Cells) {
				break
			}
			if age, ok := row.Cells[c].(string); ok && col.Name == "Age" && secondsAge.MatchString(age) {
				row.Cells[c] = "0s"
			}
		}
		cells, err := json.Marshal(row.Cells)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = string(cells)
	}
	return rows
}

// secondsAge is an age kube prints for under two minutes.
var secondsAge = regexp.MustCompile(`^[0-9]s$|^[1-5][0-9]s$`)

// Cause is a StatusCause of a 422.
func Cause(typ metav1.CauseType, field, message string) metav1.StatusCause {
	return metav1.StatusCause{Type: typ, Field: field, Message: message}
}

// WantInvalid fails the test unless code and body are kube's 422 about
// kind's object name, with causes in that order and its message made of
// them.
func WantInvalid(t testing.TB, code int, body []byte, kind, name string, causes ...metav1.StatusCause) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("got %d %s, want a Status", code, body)
	}
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = c.Field + ": " + c.Message
	}
	msg := strings.Join(parts, ", ")
	if len(parts) > 1 {
		msg = "[" + msg + "]"
	}
	msg = fmt.Sprintf("%s %q is invalid: %s", kind, name, msg)
	if code != http.StatusUnprocessableEntity || st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Message != msg {
		t.Errorf("got %d %s %q\nwant 422 Invalid %q", code, st.Reason, st.Message, msg)
	}
	var got []metav1.StatusCause
	if st.Details != nil {
		got = st.Details.Causes
	}
	if !reflect.DeepEqual(got, causes) {
		t.Errorf("causes: got %+v\nwant %+v", got, causes)
	}
}

// Object decodes a JSON answer, failing the test unless it is an object.
func Object(t testing.TB, body []byte) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return obj
}

// WantFields fails the test unless each dotted path of obj (such as
// metadata.generation, or spec.containers.[0].name with [n] indexing a
// list) holds the JSON of want; "" for a field obj lacks.
func WantFields(t testing.TB, obj map[string]any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		var v any = obj
		for _, name := range strings.Split(path, ".") {
			var i int
			if n, _ := fmt.Sscanf(name, "[%d]", &i); n == 1 {
				l, _ := v.([]any)
				v = nil
				if i >= 0 && i < len(l) {
					v = l[i]
				}
				continue
			}
			m, _ := v.(map[string]any)
			v = m[name]
		}
		got := ""
		if v != nil {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != w {
			t.Errorf("%s = %s, want %s", path, got, w)
		}
	}
}
