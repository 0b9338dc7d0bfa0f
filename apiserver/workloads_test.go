package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The answers these tests expect are kube-apiserver v1.37.2's, as the
// differential test (test/conformance) compares them.

const (
	rcsPath  = "/api/v1/namespaces/default/replicationcontrollers"
	rssPath  = "/apis/apps/v1/namespaces/default/replicasets"
	stssPath = "/apis/apps/v1/namespaces/default/statefulsets"
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

func TestReplicaSetDefaults_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rs := ts.createJSON(t, rssPath, manifest("ReplicaSet", "rs", appSelector, workloadTemplate("")))
	wantFields(t, rs, map[string]string{
		"metadata.labels":                   "",
		"spec.replicas":                     "1",
		"spec.template.spec.restartPolicy":  `"Always"`,
		"spec.template.spec.dnsPolicy":      `"ClusterFirst"`,
		"spec.template.spec.serviceAccount": "",
		"status":                            `{"replicas":0}`,
	})
}

func TestStatefulSetDefaults_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ss := ts.createJSON(t, stssPath, manifest("StatefulSet", "ss", appSelector+`"serviceName":"web",
		"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"]}}],`, workloadTemplate(`"serviceAccountName":"robot"`)))
	wantFields(t, ss, map[string]string{
		"spec.replicas":                                 "1",
		"spec.podManagementPolicy":                      `"OrderedReady"`,
		"spec.updateStrategy":                           `{"rollingUpdate":{"maxUnavailable":1,"partition":0},"type":"RollingUpdate"}`,
		"spec.persistentVolumeClaimRetentionPolicy":     `{"whenDeleted":"Retain","whenScaled":"Retain"}`,
		"spec.revisionHistoryLimit":                     "10",
		"spec.minReadySeconds":                          "",
		"spec.template.spec.serviceAccount":             `"robot"`,
		"spec.template.spec.serviceAccountName":         `"robot"`,
		"spec.volumeClaimTemplates.[0].apiVersion":      `"v1"`,
		"spec.volumeClaimTemplates.[0].kind":            `"PersistentVolumeClaim"`,
		"spec.volumeClaimTemplates.[0].spec.volumeMode": `"Filesystem"`,
		"spec.volumeClaimTemplates.[0].status":          `{"phase":"Pending"}`,
	})

	// A RollingUpdate strategy given without parameters gets none; an
	// OnDelete one none either.
	for name, strategy := range map[string]string{"rolling": "RollingUpdate", "ondelete": "OnDelete"} {
		ss = ts.createJSON(t, stssPath, manifest("StatefulSet", name, appSelector+`"updateStrategy":{"type":"`+strategy+`"},`, workloadTemplate("")))
		wantFields(t, ss, map[string]string{"spec.updateStrategy": `{"type":"` + strategy + `"}`})
	}
	ss = ts.createJSON(t, stssPath, manifest("StatefulSet", "partitioned", appSelector+`"updateStrategy":{"rollingUpdate":{"partition":2}},`, workloadTemplate("")))
	wantFields(t, ss, map[string]string{"spec.updateStrategy": `{"rollingUpdate":{"maxUnavailable":1,"partition":2},"type":"RollingUpdate"}`})
}

func TestWorkloadCreateValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const mismatch = "Invalid value: {\"app\":\"a\"}: `selector` does not match template `labels`"
	tests := []struct {
		name, kind, path, spec, template string
		causes                           []metav1.StatusCause
	}{
		{"rc negative replicas", "ReplicationController", rcsPath, `"replicas":-1,`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")}},
		{"rc selector mismatch", "ReplicationController", rcsPath, `"selector":{"app":"b"},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.template.metadata.labels", mismatch)}},
		{"rc template without labels", "ReplicationController", rcsPath, "", `{"spec":{"containers":[{"name":"c","image":"i"}]}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.selector", "Required value")}},
		{"rc restart Never", "ReplicationController", rcsPath, "", workloadTemplate(`"restartPolicy":"Never"`), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "Never": supported values: "Always"`)}},
		{"rs negative replicas and minReadySeconds", "ReplicaSet", rssPath, appSelector + `"replicas":-1,"minReadySeconds":-2,`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.minReadySeconds", "Invalid value: -2: must be greater than or equal to 0")}},
		{"rs empty selector", "ReplicaSet", rssPath, `"selector":{},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.selector", "Invalid value: {}: empty selector is invalid for deployment")}},
		{"rs no selector", "ReplicaSet", rssPath, "", workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.selector", "Required value"),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.template.metadata.labels", mismatch)}},
		{"rs selector mismatch", "ReplicaSet", rssPath, `"selector":{"matchLabels":{"app":"b"}},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.template.metadata.labels", mismatch)}},
		{"rs restart Sometimes", "ReplicaSet", rssPath, appSelector, workloadTemplate(`"restartPolicy":"Sometimes"`), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`),
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "Sometimes": supported values: "Always"`)}},
		{"rs active deadline", "ReplicaSet", rssPath, appSelector, workloadTemplate(`"activeDeadlineSeconds":10`), []metav1.StatusCause{
			cause(causeForbidden, "spec.template.spec.activeDeadlineSeconds", "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported")}},
		{"rs template container", "ReplicaSet", rssPath, appSelector, `{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":" i"}],"ephemeralContainers":[{"name":"e","image":"i"}]}}`, []metav1.StatusCause{
			// A template's image is not checked for blanks, as a Pod's is.
			cause(causeForbidden, "spec.template.spec.ephemeralContainers", "Forbidden: ephemeral containers not allowed in pod template")}},
		{"sts negative replicas", "StatefulSet", stssPath, appSelector + `"replicas":-1,`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")}},
		{"sts empty selector", "StatefulSet", stssPath, `"selector":{},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.selector", "Invalid value: {}: empty selector is invalid for statefulset")}},
		{"sts service name", "StatefulSet", stssPath, appSelector + `"serviceName":"Web_Service",`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.serviceName", `Invalid value: "Web_Service": `+dnsLabelMsg)}},
		{"sts policies", "StatefulSet", stssPath, appSelector + `"podManagementPolicy":"Random","updateStrategy":{"type":"OnDelete","rollingUpdate":{"partition":-1}},
			"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Keep"},"ordinals":{"start":-1},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.podManagementPolicy", `Invalid value: "Random": must be 'OrderedReady' or 'Parallel'`),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.updateStrategy.rollingUpdate", `Invalid value: {"Partition":-1,"MaxUnavailable":null}: only allowed for updateStrategy 'RollingUpdate'`),
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", `Unsupported value: "Keep": supported values: "Retain", "Delete"`),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.ordinals.start", "Invalid value: -1: must be greater than or equal to 0")}},
		{"sts unknown strategy", "StatefulSet", stssPath, appSelector + `"updateStrategy":{"type":"Sideways"},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.updateStrategy", `Invalid value: {"Type":"Sideways","RollingUpdate":null}: must be 'RollingUpdate' or 'OnDelete'`)}},
		{"sts max unavailable", "StatefulSet", stssPath, appSelector + `"updateStrategy":{"rollingUpdate":{"maxUnavailable":"150%"}},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.updateStrategy.rollingUpdate.maxUnavailable", `Invalid value: "150%": must not be greater than 100%`)}},
		{"sts max unavailable 0", "StatefulSet", stssPath, appSelector + `"updateStrategy":{"rollingUpdate":{"maxUnavailable":0}},`, workloadTemplate(""), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.updateStrategy.rollingUpdate.maxUnavailable", `Invalid value: 0: cannot be 0`)}},
		{"sts restart OnFailure and a hostname", "StatefulSet", stssPath, appSelector, workloadTemplate(`"restartPolicy":"OnFailure","hostname":"Not_A_Label"`), []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "OnFailure": supported values: "Always"`)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("w%d", i)
			code, body := ts.send(t, "POST", tt.path, "", manifest(tt.kind, name, tt.spec, tt.template))
			kind := tt.kind
			if strings.HasPrefix(tt.path, "/apis/apps/") {
				kind += ".apps"
			}
			msg, causes := invalid(kind, name, tt.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
	// A StatefulSet's name must be a DNS label, not a subdomain.
	code, body := ts.send(t, "POST", stssPath, "", manifest("StatefulSet", "a.b", appSelector, workloadTemplate("")))
	msg, causes := invalid("StatefulSet.apps", "a.b", cause(metav1.CauseTypeFieldValueInvalid, "metadata.name", `Invalid value: "a.b": must not contain dots`))
	wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
}

func TestWorkloadUpdateValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.createJSON(t, rcsPath, manifest("ReplicationController", "rc", "", workloadTemplate("")))
	ts.createJSON(t, rssPath, manifest("ReplicaSet", "rs", appSelector, workloadTemplate("")))
	ts.createJSON(t, stssPath, manifest("StatefulSet", "ss", appSelector+`"serviceName":"web",`, workloadTemplate("")))
	const merge = "application/merge-patch+json"
	const immutable = "field is immutable"
	steps := []struct {
		name, kind, path, patch string
		causes                  []metav1.StatusCause // nil: allowed
		generation              float64              // after an allowed change
	}{
		{"rc selector may change", "ReplicationController", rcsPath + "/rc",
			`{"spec":{"selector":{"app":"a","t":"u"},"template":{"metadata":{"labels":{"t":"u"}}}}}`, nil, 2},
		{"rs selector is immutable", "ReplicaSet.apps", rssPath + "/rs",
			`{"spec":{"selector":{"matchLabels":{"app":"a","t":"u"}},"template":{"metadata":{"labels":{"t":"u"}}}}}`, []metav1.StatusCause{
				cause(metav1.CauseTypeFieldValueInvalid, "spec.selector", `Invalid value: {"matchLabels":{"app":"a","t":"u"}}: `+immutable)}, 0},
		{"rs replicas may change", "ReplicaSet.apps", rssPath + "/rs", `{"spec":{"replicas":3}}`, nil, 2},
		{"rs labels alone leave the generation", "ReplicaSet.apps", rssPath + "/rs", `{"metadata":{"labels":{"x":"y"}}}`, nil, 2},
		{"sts service name and pod management are immutable", "StatefulSet.apps", stssPath + "/ss",
			`{"spec":{"serviceName":"other","podManagementPolicy":"Parallel"}}`, []metav1.StatusCause{
				cause(metav1.CauseTypeFieldValueInvalid, "spec.serviceName", `Invalid value: "other": `+immutable),
				cause(metav1.CauseTypeFieldValueInvalid, "spec.podManagementPolicy", `Invalid value: "Parallel": `+immutable)}, 0},
		{"sts replicas, template, strategy and more may change", "StatefulSet.apps", stssPath + "/ss",
			`{"spec":{"replicas":2,"minReadySeconds":3,"revisionHistoryLimit":4,"ordinals":{"start":1},"updateStrategy":{"type":"OnDelete","rollingUpdate":null},
			"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete"},"template":{"spec":{"containers":[{"name":"c","image":"j"}]}}}}`, nil, 2},
		{"sts new spec is validated", "StatefulSet.apps", stssPath + "/ss", `{"spec":{"replicas":-3}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -3: must be greater than or equal to 0")}, 0},
	}
	for _, s := range steps {
		code, body := ts.send(t, "PATCH", s.path, merge, s.patch)
		if s.causes == nil {
			if code != http.StatusOK {
				t.Fatalf("%s: %d %s", s.name, code, body)
			}
			var obj map[string]any
			if err := json.Unmarshal(body, &obj); err != nil {
				t.Fatal(err)
			}
			if got := at(t, obj, "metadata.generation"); got != s.generation {
				t.Errorf("%s: generation %v, want %v", s.name, got, s.generation)
			}
			continue
		}
		name := s.path[strings.LastIndex(s.path, "/")+1:]
		msg, causes := invalid(s.kind, name, s.causes...)
		t.Run(s.name, func(t *testing.T) {
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}

func TestWorkloadStatus_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	// A status sent on create is dropped.
	rs := ts.createJSON(t, rssPath, `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs"},"spec":{`+appSelector+
		`"template":`+workloadTemplate("")+`},"status":{"replicas":5}}`)
	wantFields(t, rs, map[string]string{"status": `{"replicas":0}`})
	ts.createJSON(t, stssPath, manifest("StatefulSet", "ss", appSelector, workloadTemplate("")))
	ts.createJSON(t, rcsPath, manifest("ReplicationController", "rc", "", workloadTemplate("")))

	const merge = "application/merge-patch+json"
	steps := []struct {
		name, kind, path, patch string
		causes                  []metav1.StatusCause
	}{
		{"rs counts", "ReplicaSet.apps", rssPath + "/rs/status", `{"status":{"replicas":1,"readyReplicas":2,"availableReplicas":3,"observedGeneration":-1}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "status.observedGeneration", "Invalid value: -1: must be greater than or equal to 0"),
			cause(metav1.CauseTypeFieldValueInvalid, "status.readyReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
			cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 3: cannot be greater than status.replicas"),
			cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 3: cannot be greater than readyReplicas")}},
		{"rc negative", "ReplicationController", rcsPath + "/rc/status", `{"status":{"replicas":-1}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "status.replicas", "Invalid value: -1: must be greater than or equal to 0"),
			// Each count of 0 is then above the replicas.
			cause(metav1.CauseTypeFieldValueInvalid, "status.fullyLabeledReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
			cause(metav1.CauseTypeFieldValueInvalid, "status.readyReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
			cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 0: cannot be greater than status.replicas")}},
		{"sts available above ready", "StatefulSet.apps", stssPath + "/ss/status", `{"status":{"replicas":2,"availableReplicas":1}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 1: cannot be greater than status.readyReplicas")}},
		{"sts collision count set", "StatefulSet.apps", stssPath + "/ss/status", `{"status":{"collisionCount":2}}`, nil},
		{"sts collision count lowered", "StatefulSet.apps", stssPath + "/ss/status", `{"status":{"collisionCount":1}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "status.collisionCount", "Invalid value: 1: cannot be decremented")}},
	}
	for _, s := range steps {
		code, body := ts.send(t, "PATCH", s.path, merge, s.patch)
		if s.causes == nil {
			if code != http.StatusOK {
				t.Fatalf("%s: %d %s", s.name, code, body)
			}
			continue
		}
		name := strings.Split(strings.TrimSuffix(s.path, "/status"), "/")
		msg, causes := invalid(s.kind, name[len(name)-1], s.causes...)
		t.Run(s.name, func(t *testing.T) {
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}

	// The status subresource changes the status only; an update of the
	// object keeps the stored status.
	code, body := ts.send(t, "PATCH", rssPath+"/rs/status", merge, `{"spec":{"replicas":7},"status":{"replicas":2}}`)
	if code != http.StatusOK {
		t.Fatalf("status patch: %d %s", code, body)
	}
	code, body = ts.send(t, "PATCH", rssPath+"/rs", merge, `{"status":{"replicas":9}}`)
	if code != http.StatusOK {
		t.Fatalf("patch: %d %s", code, body)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"replicas": 1.0, "status": 2.0}
	if g := map[string]any{"replicas": at(t, got, "spec.replicas"), "status": at(t, got, "status.replicas")}; !reflect.DeepEqual(g, want) {
		t.Errorf("replicas (spec, status) = %v, want %v", g, want)
	}
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
