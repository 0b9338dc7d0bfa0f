package apiserver

import (
	"encoding/json"
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

func cause(reason metav1.CauseType, field, message string) metav1.StatusCause {
	return metav1.StatusCause{Type: reason, Field: field, Message: message}
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
