package apiserver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Bad query parameters get the answers kube-apiserver gives: a 422 naming
// the options kind and the field, or a 400 with the parser's message
// (D.7).
func TestBadOptionsAnswers_D7(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one"}}`
	do := func(method, path, contentType, body string) (int, map[string]any) {
		t.Helper()
		return rawRequest(t, ts, method, path, contentType, body)
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	if code, st := do("POST", cms, "application/json", cm); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, st)
	}
	tests := []struct {
		name, method, path, contentType, body string
		code                                  int
		message                               string
	}{
		{"create with a bad dryRun", "POST", cms + "?dryRun=All&dryRun=Some", "application/json", cm, 422,
			`CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["All","Some"]: supported values: "All"`},
		{"update with a bad dryRun", "PUT", cms + "/one?dryRun=x", "application/json", cm, 422,
			`UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`},
		{"patch with a bad dryRun", "PATCH", cms + "/one?dryRun=x", "application/merge-patch+json", `{}`, 422,
			`PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`},
		{"fieldValidation is case-sensitive", "POST", cms + "?fieldValidation=strict", "application/json", cm, 422,
			`CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"`},
		{"apply without a field manager", "PATCH", cms + "/one", "application/apply-patch+yaml", `{}`, 422,
			`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"resourceVersionMatch without resourceVersion", "GET", cms + "?resourceVersionMatch=Exact", "", "", 422,
			`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`},
		{"an unknown resourceVersionMatch", "GET", cms + "?resourceVersionMatch=Bogus&resourceVersion=1", "", "", 422,
			`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""`},
		{"Exact at 0", "GET", cms + "?resourceVersionMatch=Exact&resourceVersion=0", "", "", 422,
			`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		{"a resourceVersion that is no number", "GET", cms + "?resourceVersion=-1", "", "", 400,
			`invalid resource version: resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax`},
		{"a limit that is no number", "GET", cms + "?limit=abc", "", "", 400, `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"a label selector that does not parse", "GET", cms + "?labelSelector=a%3D(b", "", "", 400, `unable to parse requirement: found '(', expected: identifier`},
		{"a negative limit is none", "GET", cms + "?limit=-1", "", "", 200, ""},
	}
	for _, tt := range tests {
		code, st := do(tt.method, tt.path, tt.contentType, tt.body)
		if code != tt.code {
			t.Errorf("%s: status %d, want %d (%v)", tt.name, code, tt.code, st)
			continue
		}
		if tt.message != "" && st["message"] != tt.message {
			t.Errorf("%s: message\n got %q\nwant %q", tt.name, st["message"], tt.message)
		}
		if code == 422 {
			details, _ := st["details"].(map[string]any)
			if st["reason"] != "Invalid" || details["group"] != "meta.k8s.io" || !strings.HasSuffix(details["kind"].(string), "Options") {
				t.Errorf("%s: status %v, want reason Invalid and details naming the meta.k8s.io options kind", tt.name, st)
			}
		}
	}
}

// Patches that do not apply get kube-apiserver's answers (D.7).
func TestBadPatchAnswers_D7(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const one = "/api/v1/namespaces/default/configmaps/one"
	if code, _ := rawRequest(t, ts, "POST", "/api/v1/namespaces/default/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one"},"data":{"a":"1"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	tests := []struct {
		name, contentType, body string
		code                    int
		reason, message         string
	}{
		{"a JSON patch test that fails", "application/json-patch+json", `[{"op":"test","path":"/data/a","value":"9"}]`, 422,
			"Invalid", "the server rejected our request due to an error in our request"},
		{"a JSON patch op that does not exist", "application/json-patch+json", `[{"op":"bogus"}]`, 422,
			"Invalid", "the server rejected our request due to an error in our request"},
		{"a merge patch that is no JSON", "application/merge-patch+json", `{"data":`, 400, "BadRequest", "invalid JSON patch"},
		{"a strategic patch that is no JSON", "application/strategic-merge-patch+json", `{"data":`, 400, "BadRequest", "invalid JSON patch"},
		{"a content type that is no patch", "application/json", `{}`, 415, "UnsupportedMediaType", "415: Unsupported Media Type"},
	}
	for _, tt := range tests {
		code, st := rawRequest(t, ts, "PATCH", one, tt.contentType, tt.body)
		if code != tt.code || st["reason"] != tt.reason || st["message"] != tt.message {
			t.Errorf("%s: got %d %v %q, want %d %s %q", tt.name, code, st["reason"], st["message"], tt.code, tt.reason, tt.message)
		}
	}
	code, st := rawRequest(t, ts, "POST", "/api/v1/namespaces/default/configmaps", "text/plain", `{}`)
	if want := "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"; code != 415 || st["message"] != want {
		t.Errorf("create with text/plain: got %d %q, want 415 %q", code, st["message"], want)
	}
}

// rawRequest sends one request to the test server and decodes the answer.
func rawRequest(t *testing.T, ts *testServer, method, path, contentType, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var st map[string]any
	_ = json.Unmarshal(b, &st)
	return resp.StatusCode, st
}

// A verb a path does not take is kube-apiserver's bare 405 (a namespaced
// kind's objects are deleted by collection only one namespace at a time);
// an object of a namespaced kind named without its namespace is no route
// at all (D.7).
func TestMethodNotAllowed_D7(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, tt := range []struct{ method, path string }{
		{"PUT", "/api/v1/namespaces/default/configmaps"},
		{"PATCH", "/api/v1/namespaces/default/configmaps"},
		{"DELETE", "/api/v1/pods"},
		{"DELETE", "/api/v1/namespaces/default/bindings"},
		{"PUT", "/api/v1/namespaces/default/pods/p/binding"},
		{"DELETE", "/api/v1/nodes/n/status"},
		{"DELETE", "/api/v1/namespaces/default/pods/p/log"},
	} {
		code, st := rawRequest(t, ts, tt.method, tt.path, "application/json", "{}")
		if code != 405 || st["reason"] != "MethodNotAllowed" || st["message"] != "the server does not allow this method on the requested resource" {
			t.Errorf("%s %s: got %d %v", tt.method, tt.path, code, st)
		}
	}
	code, st := rawRequest(t, ts, "GET", "/api/v1/pods/x", "", "")
	if code != 404 || st["message"] != "the server could not find the requested resource" {
		t.Errorf("GET /api/v1/pods/x: got %d %v, want kube's 404", code, st)
	}
}

// A page of a list no selector filters says how many objects remain after
// it; a filtered one does not (D.2).
func TestRemainingItemCount_D2(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, name := range []string{"a", "b", "c", "d"} {
		if code, st := rawRequest(t, ts, "POST", "/api/v1/namespaces/default/configmaps", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","labels":{"x":"y"}}}`); code != 201 {
			t.Fatalf("create %s: %d %v", name, code, st)
		}
	}
	_, st := rawRequest(t, ts, "GET", "/api/v1/namespaces/default/configmaps?limit=1", "", "")
	if meta := st["metadata"].(map[string]any); meta["remainingItemCount"] != float64(3) || meta["continue"] == nil {
		t.Errorf("first page of 1: metadata %v, want remainingItemCount 3 and a continue token", meta)
	}
	_, st = rawRequest(t, ts, "GET", "/api/v1/namespaces/default/configmaps?limit=1&labelSelector=x%3Dy", "", "")
	if meta := st["metadata"].(map[string]any); meta["remainingItemCount"] != nil {
		t.Errorf("a filtered page: metadata %v, want no remainingItemCount", meta)
	}
	_, st = rawRequest(t, ts, "GET", "/api/v1/namespaces/default/configmaps?limit=10", "", "")
	if meta := st["metadata"].(map[string]any); meta["remainingItemCount"] != nil {
		t.Errorf("the last page: metadata %v, want no remainingItemCount", meta)
	}
}

// An answer over 128 KiB goes gzip-encoded to a client that accepts it, as
// kube-apiserver sends it; a smaller one, or to a client that does not, as
// it is (B.1).
func TestLargeAnswersAreGzipped_B1(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	big := strings.Repeat("x", 200<<10)
	if code, st := rawRequest(t, ts, "POST", "/api/v1/namespaces/default/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"`+big+`"}}`); code != 201 {
		t.Fatalf("create: %d %v", code, st)
	}
	get := func(path, acceptEncoding string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.http.URL+path, nil)
		req.Header.Set("Accept-Encoding", acceptEncoding) // set, so that Go's client does not decode it
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := get("/api/v1/namespaces/default/configmaps/big", "gzip, deflate")
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("big answer: headers %v, want gzip", resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	var cm map[string]any
	if err := json.Unmarshal(plain, &cm); err != nil || cm["data"].(map[string]any)["a"] != big {
		t.Errorf("the gzip answer does not decode to the config map: %v", err)
	}
	if resp, _ := get("/api/v1/namespaces/default/configmaps/big", "identity"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("a client that does not accept gzip got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	if resp, _ := get("/api/v1/namespaces/default/serviceaccounts", "gzip"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("a small answer got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
}
