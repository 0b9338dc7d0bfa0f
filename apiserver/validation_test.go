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

// The answers these tests expect are kube-apiserver v1.37.2's, taken from a
// real server given the same requests.

// send makes a request with a JSON body (none when body is "") and returns
// the status code and the body.
func (ts *testServer) send(t *testing.T, method, path, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType == "" {
		contentType = "application/json"
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// wantStatus fails unless the answer is a Status with code, reason and
// message, and exactly causes (none when nil).
func wantStatus(t *testing.T, code int, body []byte, wantCode int, reason metav1.StatusReason, message string, causes []metav1.StatusCause) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("got %d %s, want a Status", code, body)
	}
	if code != wantCode || st.Code != int32(wantCode) || st.Reason != reason || st.Message != message {
		t.Errorf("got %d %s %q\nwant %d %s %q", code, st.Reason, st.Message, wantCode, reason, message)
	}
	var got []metav1.StatusCause
	if st.Details != nil {
		got = st.Details.Causes
	}
	if !reflect.DeepEqual(got, causes) {
		t.Errorf("causes: got %+v\nwant %+v", got, causes)
	}
}

// invalid builds the message and causes of a 422 about a kind's object
// from "field: Kind: detail" causes (Kind: FieldValueXxx).
func invalid(kind, name string, causes ...metav1.StatusCause) (string, []metav1.StatusCause) {
	var parts []string
	for _, c := range causes {
		parts = append(parts, c.Field+": "+c.Message)
	}
	msg := strings.Join(parts, ", ")
	if len(parts) > 1 {
		msg = "[" + msg + "]"
	}
	return fmt.Sprintf("%s %q is invalid: %s", kind, name, msg), causes
}

func cause(reason metav1.CauseType, field, message string) metav1.StatusCause {
	return metav1.StatusCause{Type: reason, Field: field, Message: message}
}

// causeForbidden is field.ErrorTypeForbidden, which metav1 has no name for.
const causeForbidden = metav1.CauseType("FieldValueForbidden")

const dnsLabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

func TestPodCreateValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := `{"name":"c","image":"i"}`
	tests := []struct {
		name   string
		spec   string
		causes []metav1.StatusCause
	}{
		{"unknown restart policy", `{"restartPolicy":"Sometimes","containers":[` + c + `]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.restartPolicy", `Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`)}},
		{"unknown DNS policy", `{"dnsPolicy":"Weird","containers":[` + c + `]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.dnsPolicy", `Unsupported value: "Weird": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`)}},
		{"no containers", `{"containers":[]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.containers", "Required value")}},
		{"container name not a DNS label", `{"containers":[{"name":"Bad_Name","image":"i"}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].name", `Invalid value: "Bad_Name": `+dnsLabelMsg)}},
		{"two containers of one name", `{"containers":[` + c + `,` + c + `]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueDuplicate, "spec.containers[1].name", `Duplicate value: "c"`)}},
		{"init container named like a container", `{"initContainers":[` + c + `],"containers":[` + c + `]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueDuplicate, "spec.initContainers[0].name", `Duplicate value: "c"`)}},
		{"no image", `{"containers":[{"name":"c"}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].image", "Required value")}},
		{"image of blanks", `{"containers":[{"name":"c","image":" "}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].image", `Invalid value: " ": must not have leading or trailing whitespace`)}},
		{"unknown pull policy", `{"containers":[{"name":"c","image":"i","imagePullPolicy":"Sometimes"}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.containers[0].imagePullPolicy", `Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`)}},
		{"unknown termination message policy", `{"containers":[{"name":"c","image":"i","terminationMessagePolicy":"Sometimes"}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.containers[0].terminationMessagePolicy", `Unsupported value: "Sometimes": supported values: "File", "FallbackToLogsOnError"`)}},
		{"port 0", `{"containers":[{"name":"c","image":"i","ports":[{"containerPort":0}]}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].ports[0].containerPort", "Required value")}},
		{"ports out of range", `{"containers":[{"name":"c","image":"i","ports":[{"containerPort":70000,"hostPort":70000}]}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].ports[0].containerPort", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].ports[0].hostPort", "Invalid value: 70000: must be between 1 and 65535, inclusive")}},
		{"unknown protocol", `{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"protocol":"ICMP"}]}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.containers[0].ports[0].protocol", `Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`)}},
		{"port names", `{"containers":[{"name":"c","image":"i","ports":[{"name":"http","containerPort":80},{"name":"http","containerPort":81},{"name":"Bad_Port_Name_Long","containerPort":82}]}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueDuplicate, "spec.containers[0].ports[1].name", `Duplicate value: "http"`),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].ports[2].name", `Invalid value: "Bad_Port_Name_Long": must be no more than 15 characters`),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].ports[2].name", `Invalid value: "Bad_Port_Name_Long": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`)}},
		{"request above limit", `{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"2"},"limits":{"cpu":"1"}}}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].resources.requests", `Invalid value: "2": must be less than or equal to cpu limit of 1`)}},
		{"negative request", `{"containers":[{"name":"c","image":"i","resources":{"requests":{"memory":"-1"}}}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].resources.requests[memory]", `Invalid value: "-1": must be greater than or equal to 0`)}},
		{"env names", `{"containers":[{"name":"c","image":"i","env":[{"name":""},{"name":"a=b"}]}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].env[0].name", "Required value"),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].env[1].name", `Invalid value: "a=b": a valid environment variable name must consist only of printable ASCII characters other than '='`)}},
		{"active deadline 0", `{"activeDeadlineSeconds":0,"containers":[` + c + `]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.activeDeadlineSeconds", "Invalid value: 0: must be between 1 and 2147483647, inclusive")}},
		{"hostname and subdomain", `{"hostname":"Bad_Host","subdomain":"x.y","containers":[` + c + `]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.hostname", `Invalid value: "Bad_Host": `+dnsLabelMsg),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.subdomain", `Invalid value: "x.y": must not contain dots`)}},
		{"node selector key", `{"nodeSelector":{"bad key!":"v"},"containers":[` + c + `]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.nodeSelector", `Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`)}},
		{"ephemeral containers on create", `{"containers":[` + c + `],"ephemeralContainers":[{"name":"e","image":"i"}]}`, []metav1.StatusCause{
			cause(causeForbidden, "spec.ephemeralContainers", "Forbidden: cannot be set on create")}},
		{"node name with scheduling gates", `{"nodeName":"n1","schedulingGates":[{"name":"g"}],"containers":[` + c + `]}`, []metav1.StatusCause{
			cause(causeForbidden, "spec.nodeName", "Forbidden: cannot be set until all schedulingGates have been cleared")}},
		{"several errors in kube's order", `{"restartPolicy":"Sometimes","dnsPolicy":"Weird","containers":[{"name":"Bad_Name"}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].name", `Invalid value: "Bad_Name": `+dnsLabelMsg),
			cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].image", "Required value"),
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.restartPolicy", `Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`),
			cause(metav1.CauseTypeFieldValueNotSupported, "spec.dnsPolicy", `Unsupported value: "Weird": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("p%d", i)
			code, body := ts.send(t, "POST", "/api/v1/namespaces/default/pods", "",
				`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+name+`"},"spec":`+tt.spec+`}`)
			msg, causes := invalid("Pod", name, tt.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}

func TestPodDefaults_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	code, body := ts.send(t, "POST", "/api/v1/namespaces/default/pods", "", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{
		"terminationGracePeriodSeconds":-5,
		"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"500m"}},
			"livenessProbe":{"httpGet":{"port":80}},"lifecycle":{"preStop":{"httpGet":{"port":81}}}}]}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var p struct {
		Spec struct {
			TerminationGracePeriodSeconds int64
			Containers                    []struct {
				Resources     struct{ Requests map[string]string }
				LivenessProbe map[string]any
				Lifecycle     struct{ PreStop map[string]any }
			}
		}
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if got := p.Spec.TerminationGracePeriodSeconds; got != 1 {
		t.Errorf("terminationGracePeriodSeconds = %d, want a negative one stored as 1", got)
	}
	if got, want := p.Spec.Containers[0].Resources.Requests, map[string]string{"cpu": "500m", "memory": "1Gi"}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests = %v, want %v (a limit without a request is the request)", got, want)
	}
	wantProbe := map[string]any{"httpGet": map[string]any{"path": "/", "port": 80.0, "scheme": "HTTP"},
		"timeoutSeconds": 1.0, "periodSeconds": 10.0, "successThreshold": 1.0, "failureThreshold": 3.0}
	if got := p.Spec.Containers[0].LivenessProbe; !reflect.DeepEqual(got, wantProbe) {
		t.Errorf("livenessProbe = %v, want %v", got, wantProbe)
	}
	wantHook := map[string]any{"httpGet": map[string]any{"path": "/", "port": 81.0, "scheme": "HTTP"}}
	if got := p.Spec.Containers[0].Lifecycle.PreStop; !reflect.DeepEqual(got, wantHook) {
		t.Errorf("preStop = %v, want %v", got, wantHook)
	}
}

// podUpdatableMsg is the start of kube's refusal of a pod update.
const podUpdatableMsg = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"

func TestPodUpdateMayChangeOnlySomeFields_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const pods = "/api/v1/namespaces/default/pods"
	const tolerations = `"tolerations":[{"key":"a","operator":"Equal","value":"b","effect":"NoSchedule"}]`
	const spec = `"spec":{"automountServiceAccountToken":false,` + tolerations + `,"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1"}}}]}`
	for _, p := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"u"},` + spec + `}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"gated"},"spec":{"schedulingGates":[{"name":"g1"}],"nodeSelector":{"a":"b"},"containers":[{"name":"c","image":"i"}]}}`,
	} {
		if code, body := ts.send(t, "POST", pods, "", p); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	const merge, smp = "application/merge-patch+json", "application/strategic-merge-patch+json"
	steps := []struct {
		name, pod, contentType, patch string
		causes                        []metav1.StatusCause // nil: allowed
	}{
		{"rename a container and change the restart policy", "u", merge, `{"spec":{"restartPolicy":"Never","containers":[{"name":"d","image":"i","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1"}}}]}}`, []metav1.StatusCause{
			cause(causeForbidden, "spec", podUpdatableMsg+
				"@@ -3,7 +3,7 @@\n  \"InitContainers\": null,\n  \"Containers\": [\n   {\n-   \"Name\": \"c\",\n+   \"Name\": \"d\",\n    \"Image\": \"i\",\n    \"Command\": null,\n    \"Args\": null,\n"+
				"@@ -47,7 +47,7 @@\n   }\n  ],\n  \"EphemeralContainers\": null,\n- \"RestartPolicy\": \"Always\",\n+ \"RestartPolicy\": \"Never\",\n  \"TerminationGracePeriodSeconds\": 30,\n  \"ActiveDeadlineSeconds\": null,\n  \"DNSPolicy\": \"ClusterFirst\",\n")}},
		{"add a container", "u", smp, `{"spec":{"containers":[{"name":"e","image":"x"}]}}`, []metav1.StatusCause{
			cause(causeForbidden, "spec.containers", "Forbidden: pod updates may not add or remove containers")}},
		{"change an image and labels", "u", smp, `{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"j"}]}}`, nil},
		{"blank an image", "u", smp, `{"spec":{"containers":[{"name":"c","image":""}]}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].image", "Required value")}},
		{"set a deadline", "u", merge, `{"spec":{"activeDeadlineSeconds":100}}`, nil},
		{"lengthen the deadline", "u", merge, `{"spec":{"activeDeadlineSeconds":200}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.activeDeadlineSeconds", "Invalid value: 200: must be less than or equal to previous value")}},
		{"drop the deadline", "u", merge, `{"spec":{"activeDeadlineSeconds":null}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.activeDeadlineSeconds", "Invalid value: null: must not update from a positive integer to nil value")}},
		{"add a toleration", "u", merge, `{"spec":{"tolerations":[{"key":"a","operator":"Equal","value":"b","effect":"NoSchedule"},{"key":"k","operator":"Exists"}]}}`, nil},
		{"change a toleration", "u", merge, `{"spec":{"tolerations":[{"key":"a","operator":"Equal","value":"c","effect":"NoSchedule"}]}}`, []metav1.StatusCause{
			cause(causeForbidden, "spec.tolerations", "Forbidden: existing toleration can not be modified except its tolerationSeconds")}},
		{"add a node selector label while gated", "gated", merge, `{"spec":{"nodeSelector":{"a":"b","c":"d"}}}`, nil},
		{"change a node selector label while gated", "gated", merge, `{"spec":{"nodeSelector":{"a":"x","c":null}}}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.nodeSelector", `Invalid value: {"a":"x"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)`)}},
		{"add a scheduling gate", "gated", merge, `{"spec":{"schedulingGates":[{"name":"g1"},{"name":"g2"}]}}`, []metav1.StatusCause{
			cause(causeForbidden, "spec.schedulingGates[1].name", "Forbidden: only deletion is allowed, but found new scheduling gate 'g2'")}},
		{"remove the scheduling gate", "gated", merge, `{"spec":{"schedulingGates":null}}`, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			code, body := ts.send(t, "PATCH", pods+"/"+s.pod, s.contentType, s.patch)
			if s.causes == nil {
				if code != http.StatusOK {
					t.Fatalf("got %d %s, want 200", code, body)
				}
				return
			}
			msg, causes := invalid("Pod", s.pod, s.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}

func TestDeleteOptionsValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	code, body := ts.send(t, "POST", cms, "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var cm metav1.PartialObjectMetadata
	if err := json.Unmarshal(body, &cm); err != nil {
		t.Fatal(err)
	}
	sideways := cause(metav1.CauseTypeFieldValueNotSupported, "propagationPolicy", `Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"`)
	badDryRun := cause(metav1.CauseTypeFieldValueNotSupported, "dryRun", `Unsupported value: ["Some"]: supported values: "All"`)
	tests := []struct {
		name, method, path, body string
		code                     int
		reason                   metav1.StatusReason
		message                  string
		causes                   []metav1.StatusCause
	}{
		{"unknown propagation policy in the body", "DELETE", cms + "/cm", `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Sideways"}`,
			422, metav1.StatusReasonInvalid, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: ` + sideways.Message, []metav1.StatusCause{sideways}},
		{"unknown propagation policy of a missing object", "DELETE", cms + "/nope", `{"propagationPolicy":"Sideways"}`,
			422, metav1.StatusReasonInvalid, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: ` + sideways.Message, []metav1.StatusCause{sideways}},
		{"unknown propagation policy in the query of a collection delete", "DELETE", cms + "?propagationPolicy=Sideways", "",
			422, metav1.StatusReasonInvalid, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: ` + sideways.Message, []metav1.StatusCause{sideways}},
		{"orphanDependents with a propagation policy", "DELETE", cms + "/cm", `{"orphanDependents":true,"propagationPolicy":"Background"}`,
			422, metav1.StatusReasonInvalid, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Background": orphanDependents and deletionPropagation cannot be both set`,
			[]metav1.StatusCause{cause(metav1.CauseTypeFieldValueInvalid, "propagationPolicy", `Invalid value: "Background": orphanDependents and deletionPropagation cannot be both set`)}},
		{"unknown dry run of a delete", "DELETE", cms + "/cm?dryRun=Some", "",
			422, metav1.StatusReasonInvalid, `DeleteOptions.meta.k8s.io "" is invalid: dryRun: ` + badDryRun.Message, []metav1.StatusCause{badDryRun}},
		{"unknown dry run of a create", "POST", cms + "?dryRun=Some", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			422, metav1.StatusReasonInvalid, `CreateOptions.meta.k8s.io "" is invalid: dryRun: ` + badDryRun.Message, []metav1.StatusCause{badDryRun}},
		{"unknown dry run of an update", "PUT", cms + "/cm?dryRun=Some", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`,
			422, metav1.StatusReasonInvalid, `UpdateOptions.meta.k8s.io "" is invalid: dryRun: ` + badDryRun.Message, []metav1.StatusCause{badDryRun}},
		{"grace period that is not a number", "DELETE", cms + "/cm?gracePeriodSeconds=abc", "",
			400, metav1.StatusReasonBadRequest, `strconv.ParseInt: parsing "abc": invalid syntax`, nil},
		{"UID precondition", "DELETE", cms + "/cm", `{"preconditions":{"uid":"nope"}}`,
			409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on ConfigMap "cm": the UID in the precondition (nope) does not match the UID in record (` + string(cm.UID) + `). The object might have been deleted and then recreated`, nil},
		{"resourceVersion precondition", "DELETE", cms + "/cm", `{"preconditions":{"resourceVersion":"1"}}`,
			409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on ConfigMap "cm": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (` + cm.ResourceVersion + `). The object might have been modified`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := ts.send(t, tt.method, tt.path, "", tt.body)
			wantStatus(t, code, body, tt.code, tt.reason, tt.message, tt.causes)
		})
	}
}

func TestNegativeGracePeriodIsOneSecond_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for path, obj := range map[string]string{
		"/api/v1/nodes":                   `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`,
		"/api/v1/namespaces/default/pods": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"i"}]}}`,
	} {
		if code, body := ts.send(t, "POST", path, "", obj); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	code, body := ts.send(t, "DELETE", "/api/v1/namespaces/default/pods/p?gracePeriodSeconds=-1", "", "")
	var p metav1.PartialObjectMetadata
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if g := p.DeletionGracePeriodSeconds; code != http.StatusOK || g == nil || *g != 1 || p.DeletionTimestamp == nil {
		t.Errorf("got %d, deletionGracePeriodSeconds %v; want 200 and the pod marked deleting with 1 s", code, g)
	}
}

func TestUnservedPaths_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const statusBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}` + "\n"
	const plainBody = "404 page not found\n"
	for _, tt := range []struct {
		method, path, body string
		want               string
	}{
		{"GET", "/api/v1/nosuchthings", "", statusBody},
		{"GET", "/api/v1/namespaces/default/nosuchthings/x", "", statusBody},
		{"POST", "/apis/apps/v1/namespaces/default/widgets", `{"apiVersion":"apps/v1","kind":"Widget","metadata":{"name":"x"}}`, statusBody},
		{"GET", "/apis/apps/v9/replicasets", "", statusBody},
		{"GET", "/apis/apps/v9", "", statusBody},
		{"GET", "/api/v2/pods", "", statusBody},
		{"GET", "/api/v1/namespaces/default/nodes", "", statusBody},
		{"GET", "/api/v1/namespaces/default/pods/x/nosuchsub", "", statusBody},
		{"DELETE", "/api/v1/nosuchthings/x", "", statusBody},
		{"GET", "/apis/nosuch.io/v1/namespaces/default/things", "", plainBody},
		{"POST", "/apis/nosuch.io/v1/namespaces/default/things", `{}`, plainBody},
		{"GET", "/apis/nosuch.io", "", plainBody},
		{"GET", "/apis//v1/pods", "", plainBody},
		{"GET", "/nonsense", "", plainBody},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			code, body := ts.send(t, tt.method, tt.path, "", tt.body)
			if code != http.StatusNotFound || string(body) != tt.want {
				t.Errorf("got %d %q, want 404 %q", code, body, tt.want)
			}
		})
	}
}

func TestBodyOfAnotherKind_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const pods = "/api/v1/namespaces/default/pods"
	for _, tt := range []struct {
		name, path, body, want string
	}{
		{"another kind", pods, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			`ConfigMap in version "v1" cannot be handled as a Pod: converting (v1.ConfigMap) to (core.Pod): unknown conversion`},
		{"a kind of another group", pods, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}`,
			`Deployment in version "v1" cannot be handled as a Pod: converting (v1.Deployment) to (core.Pod): unknown conversion`},
		{"another kind in an API group", "/apis/rbac.authorization.k8s.io/v1/clusterroles", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			`ConfigMap in version "v1" cannot be handled as a ClusterRole: converting (v1.ConfigMap) to (rbac.ClusterRole): unknown conversion`},
		{"another kind sent to events.k8s.io", "/apis/events.k8s.io/v1/namespaces/default/events", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			`ConfigMap in version "v1" cannot be handled as a Event: converting (v1.ConfigMap) to (core.Event): unknown conversion`},
		{"another kind sent to a binding", pods + "/x/binding", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			`ConfigMap in version "v1" cannot be handled as a Binding: converting (v1.ConfigMap) to (core.Binding): unknown conversion`},
		{"the kind in another group version", pods, `{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"x"}}`,
			`Pod in version "v1" cannot be handled as a Pod: no kind "Pod" is registered for version "apps/v1" in scheme "pkg/runtime/scheme.go:111"`},
		{"an unknown version", pods, `{"apiVersion":"v2","kind":"Pod","metadata":{"name":"x"}}`,
			`Pod in version "v2" cannot be handled as a Pod: no kind "Pod" is registered for version "v2" in scheme "pkg/runtime/scheme.go:111"`},
		{"the same kind of another group", "/api/v1/namespaces/default/events", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"}}`,
			`the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)`},
		{"a field of the wrong type", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":"c"}}`,
			`Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container`},
		{"not JSON", pods, "garbage\n",
			`the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: invalid character 'g' looking for beginning of value (676172626167650a)`},
		{"cut short", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"`,
			`the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Pod ...)`},
		{"empty", pods, "",
			`the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := ts.send(t, "POST", tt.path, "", tt.body)
			wantStatus(t, code, body, http.StatusBadRequest, metav1.StatusReasonBadRequest, tt.want, nil)
		})
	}
}
