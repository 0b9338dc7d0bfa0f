package core_test

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's, as the
// differential test (test/conformance) compares them. Their servers run
// without admission plugins, which would add their own warnings.

const rcsPath = "/api/v1/namespaces/default/replicationcontrollers"

// workloadTemplate is a pod template labelled app=a with one container,
// and extra pod spec fields.
func workloadTemplate(extraSpec string) string {
	spec := `"containers":[{"name":"c","image":"i"}]`
	if extraSpec != "" {
		spec += "," + extraSpec
	}
	return `{"metadata":{"labels":{"app":"a"}},"spec":{` + spec + `}}`
}

// rcManifest is a ReplicationController whose spec has the given fields
// before the template.
func rcManifest(name, spec, template string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":%q},"spec":{%s"template":%s}}`, name, spec, template)
}

// createJSON posts the JSON object to path on srv and returns what the
// server created.
func createJSON(t *testing.T, srv *apiservertest.Server, path, obj string) map[string]any {
	t.Helper()
	code, body := rt.Do(t, srv, http.MethodPost, path, obj, nil)
	if code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, code, body)
	}
	return rt.Object(t, body)
}

func TestReplicationControllerDefaults_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	rc := createJSON(t, srv, rcsPath, rcManifest("rc", "",
		`{"metadata":{"labels":{"app":"a"}},"spec":{"terminationGracePeriodSeconds":-5,"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"}}}]}}`))
	rt.WantFields(t, rc, map[string]string{
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
	rc = createJSON(t, srv, rcsPath, `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"own","labels":{"mine":"x"}},
		"spec":{"selector":{"app":"a"},"template":{"metadata":{"labels":{"app":"a","tier":"t"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`)
	rt.WantFields(t, rc, map[string]string{"metadata.labels": `{"mine":"x"}`, "spec.selector": `{"app":"a"}`})
}

func TestReplicationControllerCreateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	const mismatch = "Invalid value: {\"app\":\"a\"}: `selector` does not match template `labels`"
	tests := []struct {
		name, spec, template string
		causes               []metav1.StatusCause
	}{
		{"rc negative replicas", `"replicas":-1,`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")}},
		{"rc selector mismatch", `"selector":{"app":"b"},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.template.metadata.labels", mismatch)}},
		{"rc template without labels", "", `{"spec":{"containers":[{"name":"c","image":"i"}]}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.selector", "Required value")}},
		{"rc restart Never", "", workloadTemplate(`"restartPolicy":"Never"`), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "Never": supported values: "Always"`)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("w%d", i)
			code, body := rt.Do(t, srv, http.MethodPost, rcsPath, rcManifest(name, tt.spec, tt.template), nil)
			rt.WantInvalid(t, code, body, "ReplicationController", name, tt.causes...)
		})
	}
}

// kube lets an update change a ReplicationController's selector.
func TestReplicationControllerUpdateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	createJSON(t, srv, rcsPath, rcManifest("rc", "", workloadTemplate("")))
	code, body := rt.Do(t, srv, http.MethodPatch, rcsPath+"/rc",
		`{"spec":{"selector":{"app":"a","t":"u"},"template":{"metadata":{"labels":{"t":"u"}}}}}`, nil)
	if code != http.StatusOK {
		t.Fatalf("rc selector may change: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"metadata.generation": "2"})
}

func TestReplicationControllerStatus_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	createJSON(t, srv, rcsPath, rcManifest("rc", "", workloadTemplate("")))
	code, body := rt.Do(t, srv, http.MethodPatch, rcsPath+"/rc/status", `{"status":{"replicas":-1}}`, nil)
	rt.WantInvalid(t, code, body, "ReplicationController", "rc",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.replicas", "Invalid value: -1: must be greater than or equal to 0"),
		// Each count of 0 is then above the replicas.
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.fullyLabeledReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.readyReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 0: cannot be greater than status.replicas"))
}

// A workload whose pod template has a negative grace period is stored
// with kube's warning; an update that leaves the spec alone warns no
// more (D.5).
func TestPodTemplateGracePeriodWarning_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	const rc = `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"r"%s},"spec":{"template":{"metadata":{"labels":{"a":"b"}},"spec":{"terminationGracePeriodSeconds":-5,"containers":[{"name":"c","image":"i"}]}}}}`
	send := func(method, path, body string) http.Header {
		t.Helper()
		code, h, data := rt.DoHeader(t, srv, method, path, body, nil)
		if code >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, code, data)
		}
		return h
	}
	const want = `299 - "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"`
	h := send(http.MethodPost, rcsPath, fmt.Sprintf(rc, ""))
	if got := h.Values("Warning"); len(got) != 1 || got[0] != want {
		t.Errorf("create: Warning %q, want [%s]", got, want)
	}
	h = send(http.MethodPatch, rcsPath+"/r", `{"metadata":{"labels":{"x":"y"}}}`)
	if got := h.Values("Warning"); len(got) != 0 {
		t.Errorf("a label update: Warning %q, want none", got)
	}
}
