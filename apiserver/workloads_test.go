package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The answers these tests expect are kube-apiserver v1.37.2's, as the
// differential test (test/conformance) compares them.

const (
	rcsPath = "/api/v1/namespaces/default/replicationcontrollers"
	rssPath = "/apis/apps/v1/namespaces/default/replicasets"
	// appSelector selects the labels of workloadTemplate.
	appSelector = `"selector":{"matchLabels":{"app":"a"}},`
)

// workloadTemplate is a pod template labelled app=a with one container,
// and extra pod spec fields.
func workloadTemplate(extraSpec string) string {
	spec := `"containers":[{"name":"c","image":"i"}]`
	if extraSpec != "" {
		spec += "," + extraSpec
	}
	return `{"metadata":{"labels":{"app":"a"}},"spec":{` + spec + `}}`
}

// manifest is an object of kind (apps/v1 unless ReplicationController)
// whose spec has the given fields before the template.
func manifest(kind, name, spec, template string) string {
	apiVersion := "apps/v1"
	if kind == "ReplicationController" {
		apiVersion = "v1"
	}
	return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q},"spec":{%s"template":%s}}`, apiVersion, kind, name, spec, template)
}

// createJSON creates an object and returns its answer decoded as JSON.
func (ts *testServer) createJSON(t *testing.T, path, body string) map[string]any {
	t.Helper()
	code, b := ts.send(t, "POST", path, "", body)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at reads a value of a decoded JSON object by a dotted path; [n] indexes
// a list.
func at(t *testing.T, v any, path string) any {
	t.Helper()
	for _, p := range strings.Split(path, ".") {
		var idx int
		if n, _ := fmt.Sscanf(p, "[%d]", &idx); n == 1 {
			l, _ := v.([]any)
			if idx >= len(l) {
				return nil
			}
			v = l[idx]
			continue
		}
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// wantFields compares the values at paths (JSON-encoded; "" for absent).
func wantFields(t *testing.T, obj map[string]any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		got := ""
		if v := at(t, obj, path); v != nil {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != w {
			t.Errorf("%s = %s, want %s", path, got, w)
		}
	}
}

func TestReplicationControllerDefaults_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rc := ts.createJSON(t, rcsPath, manifest("ReplicationController", "rc", "",
		`{"metadata":{"labels":{"app":"a"}},"spec":{"terminationGracePeriodSeconds":-5,"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"}}}]}}`))
	wantFields(t, rc, map[string]string{
		"metadata.labels":     `{"app":"a"}`, // from the template
		"metadata.generation": "1",
		"spec.selector":       `{"app":"a"}`,
		"spec.replicas":       "1",
		"status":              `{"replicas":0}`,
		// The pod spec defaults, but not those of a Pod only.
		"spec.template.spec.restartPolicy":                           `"Always"`,
		"spec.template.spec.dnsPolicy":                               `"ClusterFirst"`,
		"spec.template.spec.schedulerName":                           `"default-scheduler"`,
		"spec.template.spec.securityContext":                         `{}`,
		"spec.template.spec.terminationGracePeriodSeconds":           "-5",
		"spec.template.spec.enableServiceLinks":                      "",
		"spec.template.spec.containers.[0].imagePullPolicy":          `"Always"`,
		"spec.template.spec.containers.[0].terminationMessagePath":   `"/dev/termination-log"`,
		"spec.template.spec.containers.[0].terminationMessagePolicy": `"File"`,
		"spec.template.spec.containers.[0].resources":                `{"limits":{"cpu":"1"}}`,
	})

	// Labels and a selector given are kept.
	rc = ts.createJSON(t, rcsPath, `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"own","labels":{"mine":"x"}},
		"spec":{"selector":{"app":"a"},"template":{"metadata":{"labels":{"app":"a","tier":"t"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`)
	wantFields(t, rc, map[string]string{"metadata.labels": `{"mine":"x"}`, "spec.selector": `{"app":"a"}`})
}

func TestReplicationControllerCreateValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const mismatch = "Invalid value: {\"app\":\"a\"}: `selector` does not match template `labels`"
	tests := []struct {
		name, spec, template string
		causes               []metav1.StatusCause
	}{
		{"rc negative replicas", `"replicas":-1,`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")}},
		{"rc selector mismatch", `"selector":{"app":"b"},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.template.metadata.labels", mismatch)}},
		{"rc template without labels", "", `{"spec":{"containers":[{"name":"c","image":"i"}]}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.selector", "Required value")}},
		{"rc restart Never", "", workloadTemplate(`"restartPolicy":"Never"`), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "Never": supported values: "Always"`)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("w%d", i)
			code, body := ts.send(t, "POST", rcsPath, "", manifest("ReplicationController", name, tt.spec, tt.template))
			msg, causes := invalid("ReplicationController", name, tt.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}

// kube lets an update change a ReplicationController's selector.
func TestReplicationControllerUpdateValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.createJSON(t, rcsPath, manifest("ReplicationController", "rc", "", workloadTemplate("")))
	code, body := ts.send(t, "PATCH", rcsPath+"/rc", "application/merge-patch+json",
		`{"spec":{"selector":{"app":"a","t":"u"},"template":{"metadata":{"labels":{"t":"u"}}}}}`)
	if code != http.StatusOK {
		t.Fatalf("rc selector may change: %d %s", code, body)
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatal(err)
	}
	if got := at(t, obj, "metadata.generation"); got != 2.0 {
		t.Errorf("rc selector may change: generation %v, want 2", got)
	}
}

func TestReplicationControllerStatus_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.createJSON(t, rcsPath, manifest("ReplicationController", "rc", "", workloadTemplate("")))
	code, body := ts.send(t, "PATCH", rcsPath+"/rc/status", "application/merge-patch+json", `{"status":{"replicas":-1}}`)
	msg, causes := invalid("ReplicationController", "rc",
		cause(metav1.CauseTypeFieldValueInvalid, "status.replicas", "Invalid value: -1: must be greater than or equal to 0"),
		// Each count of 0 is then above the replicas.
		cause(metav1.CauseTypeFieldValueInvalid, "status.fullyLabeledReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
		cause(metav1.CauseTypeFieldValueInvalid, "status.readyReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
		cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 0: cannot be greater than status.replicas"))
	wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
}

// A workload whose pod template has a negative grace period is stored
// with kube's warning; an update that leaves the spec alone warns no
// more (D.5).
func TestPodTemplateGracePeriodWarning_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const rc = `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"r"%s},"spec":{"template":{"metadata":{"labels":{"a":"b"}},"spec":{"terminationGracePeriodSeconds":-5,"containers":[{"name":"c","image":"i"}]}}}}`
	send := func(method, path, body string) http.Header {
		t.Helper()
		req, _ := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if method == http.MethodPatch {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		resp, err := ts.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			data, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
		return resp.Header
	}
	const want = `299 - "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"`
	h := send(http.MethodPost, "/api/v1/namespaces/default/replicationcontrollers", fmt.Sprintf(rc, ""))
	if got := h.Values("Warning"); len(got) != 1 || got[0] != want {
		t.Errorf("create: Warning %q, want [%s]", got, want)
	}
	h = send(http.MethodPatch, "/api/v1/namespaces/default/replicationcontrollers/r", `{"metadata":{"labels":{"x":"y"}}}`)
	if got := h.Values("Warning"); len(got) != 0 {
		t.Errorf("a label update: Warning %q, want none", got)
	}
}
