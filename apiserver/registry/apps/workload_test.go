package apps_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

func TestReplicaSetDefaults_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	rs := createJSON(t, srv, rssPath, manifest("ReplicaSet", "rs", appSelector, workloadTemplate("")))
	rt.WantFields(t, rs, map[string]string{
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
	srv := apiservertest.Start(t)
	ss := createJSON(t, srv, stssPath, manifest("StatefulSet", "ss", appSelector+`"serviceName":"web",
		"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"]}}],`, workloadTemplate(`"serviceAccountName":"robot"`)))
	rt.WantFields(t, ss, map[string]string{
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

	// Read back from the store, whose encoding keeps no apiVersion or kind
	// inside an object, the templates have them still, as kube's
	// conversion writes them on every answer.
	code, body := rt.Do(t, srv, http.MethodGet, stssPath+"/ss", "", nil)
	if code != http.StatusOK {
		t.Fatalf("get: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{
		"spec.volumeClaimTemplates.[0].apiVersion": `"v1"`,
		"spec.volumeClaimTemplates.[0].kind":       `"PersistentVolumeClaim"`,
	})

	// A RollingUpdate strategy given without parameters gets none; an
	// OnDelete one none either.
	for name, strategy := range map[string]string{"rolling": "RollingUpdate", "ondelete": "OnDelete"} {
		ss = createJSON(t, srv, stssPath, manifest("StatefulSet", name, appSelector+`"updateStrategy":{"type":"`+strategy+`"},`, workloadTemplate("")))
		rt.WantFields(t, ss, map[string]string{"spec.updateStrategy": `{"type":"` + strategy + `"}`})
	}
	ss = createJSON(t, srv, stssPath, manifest("StatefulSet", "partitioned", appSelector+`"updateStrategy":{"rollingUpdate":{"partition":2}},`, workloadTemplate("")))
	rt.WantFields(t, ss, map[string]string{"spec.updateStrategy": `{"rollingUpdate":{"maxUnavailable":1,"partition":2},"type":"RollingUpdate"}`})
}

func TestWorkloadCreateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const mismatch = "Invalid value: {\"app\":\"a\"}: `selector` does not match template `labels`"
	tests := []struct {
		name, kind, path, spec, template string
		causes                           []metav1.StatusCause
	}{
		{"rs negative replicas and minReadySeconds", "ReplicaSet", rssPath, appSelector + `"replicas":-1,"minReadySeconds":-2,`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.minReadySeconds", "Invalid value: -2: must be greater than or equal to 0")}},
		{"rs empty selector", "ReplicaSet", rssPath, `"selector":{},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.selector", "Invalid value: {}: empty selector is invalid for deployment")}},
		{"rs no selector", "ReplicaSet", rssPath, "", workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.selector", "Required value"),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.template.metadata.labels", mismatch)}},
		{"rs selector mismatch", "ReplicaSet", rssPath, `"selector":{"matchLabels":{"app":"b"}},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.template.metadata.labels", mismatch)}},
		{"rs restart Sometimes", "ReplicaSet", rssPath, appSelector, workloadTemplate(`"restartPolicy":"Sometimes"`), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`),
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "Sometimes": supported values: "Always"`)}},
		{"rs active deadline", "ReplicaSet", rssPath, appSelector, workloadTemplate(`"activeDeadlineSeconds":10`), []metav1.StatusCause{
			rt.Cause(causeForbidden, "spec.template.spec.activeDeadlineSeconds", "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported")}},
		{"rs template container", "ReplicaSet", rssPath, appSelector, `{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":" i"}],"ephemeralContainers":[{"name":"e","image":"i"}]}}`, []metav1.StatusCause{
			// A template's image is not checked for blanks, as a Pod's is.
			rt.Cause(causeForbidden, "spec.template.spec.ephemeralContainers", "Forbidden: ephemeral containers not allowed in pod template")}},
		{"sts negative replicas", "StatefulSet", stssPath, appSelector + `"replicas":-1,`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")}},
		{"sts empty selector", "StatefulSet", stssPath, `"selector":{},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.selector", "Invalid value: {}: empty selector is invalid for statefulset")}},
		{"sts service name", "StatefulSet", stssPath, appSelector + `"serviceName":"Web_Service",`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.serviceName", `Invalid value: "Web_Service": `+dnsLabelMsg)}},
		{"sts policies", "StatefulSet", stssPath, appSelector + `"podManagementPolicy":"Random","updateStrategy":{"type":"OnDelete","rollingUpdate":{"partition":-1}},
			"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Keep"},"ordinals":{"start":-1},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.podManagementPolicy", `Invalid value: "Random": must be 'OrderedReady' or 'Parallel'`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.updateStrategy.rollingUpdate", `Invalid value: {"Partition":-1,"MaxUnavailable":null}: only allowed for updateStrategy 'RollingUpdate'`),
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", `Unsupported value: "Keep": supported values: "Retain", "Delete"`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.ordinals.start", "Invalid value: -1: must be greater than or equal to 0")}},
		{"sts unknown strategy", "StatefulSet", stssPath, appSelector + `"updateStrategy":{"type":"Sideways"},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.updateStrategy", `Invalid value: {"Type":"Sideways","RollingUpdate":null}: must be 'RollingUpdate' or 'OnDelete'`)}},
		{"sts max unavailable", "StatefulSet", stssPath, appSelector + `"updateStrategy":{"rollingUpdate":{"maxUnavailable":"150%"}},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.updateStrategy.rollingUpdate.maxUnavailable", `Invalid value: "150%": must not be greater than 100%`)}},
		{"sts max unavailable 0", "StatefulSet", stssPath, appSelector + `"updateStrategy":{"rollingUpdate":{"maxUnavailable":0}},`, workloadTemplate(""), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.updateStrategy.rollingUpdate.maxUnavailable", `Invalid value: 0: cannot be 0`)}},
		{"sts restart OnFailure and a hostname", "StatefulSet", stssPath, appSelector, workloadTemplate(`"restartPolicy":"OnFailure","hostname":"Not_A_Label"`), []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.template.spec.restartPolicy", `Unsupported value: "OnFailure": supported values: "Always"`)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("w%d", i)
			code, body := rt.Do(t, srv, http.MethodPost, tt.path, manifest(tt.kind, name, tt.spec, tt.template), nil)
			rt.WantInvalid(t, code, body, tt.kind+".apps", name, tt.causes...)
		})
	}
	// A StatefulSet's name must be a DNS label, not a subdomain.
	code, body := rt.Do(t, srv, http.MethodPost, stssPath, manifest("StatefulSet", "a.b", appSelector, workloadTemplate("")), nil)
	rt.WantInvalid(t, code, body, "StatefulSet.apps", "a.b", rt.Cause(metav1.CauseTypeFieldValueInvalid, "metadata.name", `Invalid value: "a.b": must not contain dots`))
}

func TestWorkloadUpdateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	createJSON(t, srv, rssPath, manifest("ReplicaSet", "rs", appSelector, workloadTemplate("")))
	createJSON(t, srv, stssPath, manifest("StatefulSet", "ss", appSelector+`"serviceName":"web",`, workloadTemplate("")))
	const immutable = "field is immutable"
	steps := []struct {
		name, kind, path, patch string
		causes                  []metav1.StatusCause // nil: allowed
		generation              int                  // after an allowed change
	}{
		{"rs selector is immutable", "ReplicaSet.apps", rssPath + "/rs",
			`{"spec":{"selector":{"matchLabels":{"app":"a","t":"u"}},"template":{"metadata":{"labels":{"t":"u"}}}}}`, []metav1.StatusCause{
				rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.selector", `Invalid value: {"matchLabels":{"app":"a","t":"u"}}: `+immutable)}, 0},
		{"rs replicas may change", "ReplicaSet.apps", rssPath + "/rs", `{"spec":{"replicas":3}}`, nil, 2},
		{"rs labels alone leave the generation", "ReplicaSet.apps", rssPath + "/rs", `{"metadata":{"labels":{"x":"y"}}}`, nil, 2},
		{"sts service name and pod management are immutable", "StatefulSet.apps", stssPath + "/ss",
			`{"spec":{"serviceName":"other","podManagementPolicy":"Parallel"}}`, []metav1.StatusCause{
				rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.serviceName", `Invalid value: "other": `+immutable),
				rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.podManagementPolicy", `Invalid value: "Parallel": `+immutable)}, 0},
		{"sts replicas, template, strategy and more may change", "StatefulSet.apps", stssPath + "/ss",
			`{"spec":{"replicas":2,"minReadySeconds":3,"revisionHistoryLimit":4,"ordinals":{"start":1},"updateStrategy":{"type":"OnDelete","rollingUpdate":null},
			"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete"},"template":{"spec":{"containers":[{"name":"c","image":"j"}]}}}}`, nil, 2},
		{"sts new spec is validated", "StatefulSet.apps", stssPath + "/ss", `{"spec":{"replicas":-3}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.replicas", "Invalid value: -3: must be greater than or equal to 0")}, 0},
	}
	for _, s := range steps {
		if s.causes == nil {
			obj := patchJSON(t, srv, s.path, s.patch, http.StatusOK)
			t.Run(s.name, func(t *testing.T) {
				rt.WantFields(t, obj, map[string]string{"metadata.generation": strconv.Itoa(s.generation)})
			})
			continue
		}
		code, body := rt.Do(t, srv, http.MethodPatch, s.path, s.patch, nil)
		name := s.path[strings.LastIndex(s.path, "/")+1:]
		t.Run(s.name, func(t *testing.T) {
			rt.WantInvalid(t, code, body, s.kind, name, s.causes...)
		})
	}
}

func TestWorkloadStatus_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	// A status sent on create is dropped.
	rs := createJSON(t, srv, rssPath, `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs"},"spec":{`+appSelector+
		`"template":`+workloadTemplate("")+`},"status":{"replicas":5}}`)
	rt.WantFields(t, rs, map[string]string{"status": `{"replicas":0}`})
	createJSON(t, srv, stssPath, manifest("StatefulSet", "ss", appSelector, workloadTemplate("")))

	steps := []struct {
		name, kind, path, patch string
		causes                  []metav1.StatusCause
	}{
		{"rs counts", "ReplicaSet.apps", rssPath + "/rs/status", `{"status":{"replicas":1,"readyReplicas":2,"availableReplicas":3,"observedGeneration":-1}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.observedGeneration", "Invalid value: -1: must be greater than or equal to 0"),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.readyReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 3: cannot be greater than status.replicas"),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 3: cannot be greater than readyReplicas")}},
		{"sts available above ready", "StatefulSet.apps", stssPath + "/ss/status", `{"status":{"replicas":2,"availableReplicas":1}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.availableReplicas", "Invalid value: 1: cannot be greater than status.readyReplicas")}},
		{"sts collision count set", "StatefulSet.apps", stssPath + "/ss/status", `{"status":{"collisionCount":2}}`, nil},
		{"sts collision count lowered", "StatefulSet.apps", stssPath + "/ss/status", `{"status":{"collisionCount":1}}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "status.collisionCount", "Invalid value: 1: cannot be decremented")}},
	}
	for _, s := range steps {
		code, body := rt.Do(t, srv, http.MethodPatch, s.path, s.patch, nil)
		if s.causes == nil {
			if code != http.StatusOK {
				t.Fatalf("%s: %d %s", s.name, code, body)
			}
			continue
		}
		name := strings.Split(strings.TrimSuffix(s.path, "/status"), "/")
		t.Run(s.name, func(t *testing.T) {
			rt.WantInvalid(t, code, body, s.kind, name[len(name)-1], s.causes...)
		})
	}

	// The status subresource changes the status only; an update of the
	// object keeps the stored status.
	patchJSON(t, srv, rssPath+"/rs/status", `{"spec":{"replicas":7},"status":{"replicas":2}}`, http.StatusOK)
	got := patchJSON(t, srv, rssPath+"/rs", `{"status":{"replicas":9}}`, http.StatusOK)
	rt.WantFields(t, got, map[string]string{"spec.replicas": "1", "status.replicas": "2"})
}
