package core_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5). Their
// servers run without admission plugins, so that a pod is validated as it
// comes, given no service account or token volume.

// causeForbidden is field.ErrorTypeForbidden, which metav1 has no name for.
const causeForbidden = metav1.CauseType("FieldValueForbidden")

func TestPodCreateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	c := `{"name":"c","image":"i"}`
	tests := []struct {
		name   string
		spec   string
		causes []metav1.StatusCause
	}{
		{"unknown restart policy", `{"restartPolicy":"Sometimes","containers":[` + c + `]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.restartPolicy", `Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`)}},
		{"unknown DNS policy", `{"dnsPolicy":"Weird","containers":[` + c + `]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.dnsPolicy", `Unsupported value: "Weird": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`)}},
		{"no containers", `{"containers":[]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.containers", "Required value")}},
		{"container name not a DNS label", `{"containers":[{"name":"Bad_Name","image":"i"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].name", `Invalid value: "Bad_Name": `+rfc1123LabelMsg)}},
		{"two containers of one name", `{"containers":[` + c + `,` + c + `]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueDuplicate, "spec.containers[1].name", `Duplicate value: "c"`)}},
		{"init container named like a container", `{"initContainers":[` + c + `],"containers":[` + c + `]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueDuplicate, "spec.initContainers[0].name", `Duplicate value: "c"`)}},
		{"no image", `{"containers":[{"name":"c"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].image", "Required value")}},
		{"image of blanks", `{"containers":[{"name":"c","image":" "}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].image", `Invalid value: " ": must not have leading or trailing whitespace`)}},
		{"unknown pull policy", `{"containers":[{"name":"c","image":"i","imagePullPolicy":"Sometimes"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.containers[0].imagePullPolicy", `Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`)}},
		{"unknown termination message policy", `{"containers":[{"name":"c","image":"i","terminationMessagePolicy":"Sometimes"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.containers[0].terminationMessagePolicy", `Unsupported value: "Sometimes": supported values: "File", "FallbackToLogsOnError"`)}},
		{"port 0", `{"containers":[{"name":"c","image":"i","ports":[{"containerPort":0}]}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].ports[0].containerPort", "Required value")}},
		{"ports out of range", `{"containers":[{"name":"c","image":"i","ports":[{"containerPort":70000,"hostPort":70000}]}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].ports[0].containerPort", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].ports[0].hostPort", "Invalid value: 70000: must be between 1 and 65535, inclusive")}},
		{"unknown protocol", `{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"protocol":"ICMP"}]}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.containers[0].ports[0].protocol", `Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`)}},
		{"port names", `{"containers":[{"name":"c","image":"i","ports":[{"name":"http","containerPort":80},{"name":"http","containerPort":81},{"name":"Bad_Port_Name_Long","containerPort":82}]}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueDuplicate, "spec.containers[0].ports[1].name", `Duplicate value: "http"`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].ports[2].name", `Invalid value: "Bad_Port_Name_Long": must be no more than 15 characters`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].ports[2].name", `Invalid value: "Bad_Port_Name_Long": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`)}},
		{"request above limit", `{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"2"},"limits":{"cpu":"1"}}}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].resources.requests", `Invalid value: "2": must be less than or equal to cpu limit of 1`)}},
		{"negative request", `{"containers":[{"name":"c","image":"i","resources":{"requests":{"memory":"-1"}}}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].resources.requests[memory]", `Invalid value: "-1": must be greater than or equal to 0`)}},
		{"env names", `{"containers":[{"name":"c","image":"i","env":[{"name":""},{"name":"a=b"}]}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].env[0].name", "Required value"),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].env[1].name", `Invalid value: "a=b": a valid environment variable name must consist only of printable ASCII characters other than '='`)}},
		{"active deadline 0", `{"activeDeadlineSeconds":0,"containers":[` + c + `]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.activeDeadlineSeconds", "Invalid value: 0: must be between 1 and 2147483647, inclusive")}},
		{"hostname and subdomain", `{"hostname":"Bad_Host","subdomain":"x.y","containers":[` + c + `]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.hostname", `Invalid value: "Bad_Host": `+rfc1123LabelMsg),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.subdomain", `Invalid value: "x.y": must not contain dots`)}},
		{"node selector key", `{"nodeSelector":{"bad key!":"v"},"containers":[` + c + `]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.nodeSelector", `Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`)}},
		{"ephemeral containers on create", `{"containers":[` + c + `],"ephemeralContainers":[{"name":"e","image":"i"}]}`, []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.ephemeralContainers", "Forbidden: cannot be set on create")}},
		{"node name with scheduling gates", `{"nodeName":"n1","schedulingGates":[{"name":"g"}],"containers":[` + c + `]}`, []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.nodeName", "Forbidden: cannot be set until all schedulingGates have been cleared")}},
		{"several errors in kube's order", `{"restartPolicy":"Sometimes","dnsPolicy":"Weird","containers":[{"name":"Bad_Name"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.containers[0].name", `Invalid value: "Bad_Name": `+rfc1123LabelMsg),
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].image", "Required value"),
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.restartPolicy", `Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`),
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.dnsPolicy", `Unsupported value: "Weird": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("p%d", i)
			code, body := rt.Do(t, srv, "POST", "/api/v1/namespaces/default/pods",
				`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+name+`"},"spec":`+tt.spec+`}`, nil)
			rt.WantInvalid(t, code, body, "Pod", name, tt.causes...)
		})
	}
}

func TestPodDefaults_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	code, body := rt.Do(t, srv, "POST", "/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{
		"terminationGracePeriodSeconds":-5,
		"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"500m"}},
			"livenessProbe":{"httpGet":{"port":80}},"lifecycle":{"preStop":{"httpGet":{"port":81}}}}]}}`, nil)
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
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	const pods = "/api/v1/namespaces/default/pods"
	const tolerations = `"tolerations":[{"key":"a","operator":"Equal","value":"b","effect":"NoSchedule"}]`
	const spec = `"spec":{"automountServiceAccountToken":false,` + tolerations + `,"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1"}}}]}`
	for _, p := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"u"},` + spec + `}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"gated"},"spec":{"schedulingGates":[{"name":"g1"}],"nodeSelector":{"a":"b"},"containers":[{"name":"c","image":"i"}]}}`,
	} {
		if code, body := rt.Do(t, srv, "POST", pods, p, nil); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	const merge, smp = "application/merge-patch+json", "application/strategic-merge-patch+json"
	steps := []struct {
		name, pod, contentType, patch string
		causes                        []metav1.StatusCause // nil: allowed
	}{
		{"rename a container and change the restart policy", "u", merge, `{"spec":{"restartPolicy":"Never","containers":[{"name":"d","image":"i","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1"}}}]}}`, []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec", podUpdatableMsg+
				"@@ -3,7 +3,7 @@\n  \"InitContainers\": null,\n  \"Containers\": [\n   {\n-   \"Name\": \"c\",\n+   \"Name\": \"d\",\n    \"Image\": \"i\",\n    \"Command\": null,\n    \"Args\": null,\n"+
				"@@ -47,7 +47,7 @@\n   }\n  ],\n  \"EphemeralContainers\": null,\n- \"RestartPolicy\": \"Always\",\n+ \"RestartPolicy\": \"Never\",\n  \"TerminationGracePeriodSeconds\": 30,\n  \"ActiveDeadlineSeconds\": null,\n  \"DNSPolicy\": \"ClusterFirst\",\n")}},
		{"add a container", "u", smp, `{"spec":{"containers":[{"name":"e","image":"x"}]}}`, []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.containers", "Forbidden: pod updates may not add or remove containers")}},
		{"change an image and labels", "u", smp, `{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"j"}]}}`, nil},
		{"blank an image", "u", smp, `{"spec":{"containers":[{"name":"c","image":""}]}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.containers[0].image", "Required value")}},
		{"set a deadline", "u", merge, `{"spec":{"activeDeadlineSeconds":100}}`, nil},
		{"lengthen the deadline", "u", merge, `{"spec":{"activeDeadlineSeconds":200}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.activeDeadlineSeconds", "Invalid value: 200: must be less than or equal to previous value")}},
		{"drop the deadline", "u", merge, `{"spec":{"activeDeadlineSeconds":null}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.activeDeadlineSeconds", "Invalid value: null: must not update from a positive integer to nil value")}},
		{"add a toleration", "u", merge, `{"spec":{"tolerations":[{"key":"a","operator":"Equal","value":"b","effect":"NoSchedule"},{"key":"k","operator":"Exists"}]}}`, nil},
		{"change a toleration", "u", merge, `{"spec":{"tolerations":[{"key":"a","operator":"Equal","value":"c","effect":"NoSchedule"}]}}`, []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.tolerations", "Forbidden: existing toleration can not be modified except its tolerationSeconds")}},
		{"add a node selector label while gated", "gated", merge, `{"spec":{"nodeSelector":{"a":"b","c":"d"}}}`, nil},
		{"change a node selector label while gated", "gated", merge, `{"spec":{"nodeSelector":{"a":"x","c":null}}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.nodeSelector", `Invalid value: {"a":"x"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)`)}},
		{"add a scheduling gate", "gated", merge, `{"spec":{"schedulingGates":[{"name":"g1"},{"name":"g2"}]}}`, []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.schedulingGates[1].name", "Forbidden: only deletion is allowed, but found new scheduling gate 'g2'")}},
		{"remove the scheduling gate", "gated", merge, `{"spec":{"schedulingGates":null}}`, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, "PATCH", pods+"/"+s.pod, s.patch, map[string]string{"Content-Type": s.contentType})
			if s.causes == nil {
				if code != http.StatusOK {
					t.Fatalf("got %d %s, want 200", code, body)
				}
				return
			}
			rt.WantInvalid(t, code, body, "Pod", s.pod, s.causes...)
		})
	}
}

// A pod applied server-side with a status keeps the status the kubelet
// wrote, and an apply to pods/status leaves the spec and the owners alone
// without conflicting on them (B.8); podIP fills podIPs, as kube's
// defaults keep the two in step.
func TestPodApplyWithStatus_B8(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const path = "/api/v1/namespaces/default/pods/p"
	apply := map[string]string{"Content-Type": "application/apply-patch+yaml"}
	manifest := func(image, status string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: " + image + "}]}\nstatus: " + status + "\n"
	}
	code, body := rt.Do(t, srv, http.MethodPatch, path+"?fieldManager=kubectl", manifest("i", "{phase: Running, podIP: 10.0.0.9}"), apply)
	if code != http.StatusCreated {
		t.Fatalf("apply create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"status.phase": `"Pending"`, "status.podIP": ""})
	if code, body = rt.Do(t, srv, http.MethodPatch, path+"/status?fieldManager=kubelet", `{"status":{"phase":"Running","podIP":"10.0.0.1"}}`, nil); code != http.StatusOK {
		t.Fatalf("status patch: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"status.podIPs": `[{"ip":"10.0.0.1"}]`})
	code, body = rt.Do(t, srv, http.MethodPatch, path+"?fieldManager=kubectl", manifest("i", "{phase: Succeeded, podIP: 10.0.0.2}"), apply)
	if code != http.StatusOK {
		t.Fatalf("apply with a stale status: %d %s, want 200", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"status.phase": `"Running"`, "status.podIP": `"10.0.0.1"`})
	code, body = rt.Do(t, srv, http.MethodPatch, path+"/status?fieldManager=kubelet-apply", manifest("j", "{phase: Running, podIP: 10.0.0.1}"), apply)
	if code != http.StatusOK {
		t.Fatalf("apply to pods/status with another image: %d %s, want 200", code, body)
	}
	p := rt.Object(t, body)
	rt.WantFields(t, p, map[string]string{"spec.containers.[0].image": `"i"`})
	for _, e := range p["metadata"].(map[string]any)["managedFields"].([]any) {
		e := e.(map[string]any)
		fields, _ := json.Marshal(e["fieldsV1"])
		if e["manager"] == "kubectl" && strings.Contains(string(fields), `"f:status"`) || e["manager"] == "kubelet-apply" && strings.Contains(string(fields), `"f:spec"`) {
			t.Errorf("%s's entry: got %s, want no reset field", e["manager"], fields)
		}
	}
}
