package core_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

const configKeyMsg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"

func TestConfigMapAndSecretValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	big := strings.Repeat("x", 1<<20)
	tests := []struct {
		name, kind, object string
		causes             []metav1.StatusCause
	}{
		{"config map key with a slash", "ConfigMap", `"data":{"no/slash":"x"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "data[no/slash]", `Invalid value: "no/slash": `+configKeyMsg)}},
		{"config map key in data and binaryData", "ConfigMap", `"data":{"a":"x"},"binaryData":{"a":"eA=="}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "data[a]", `Invalid value: "a": duplicate of key present in binaryData`)}},
		{"config map key '.'", "ConfigMap", `"binaryData":{".":"eA=="}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "binaryData[.]", `Invalid value: ".": must not be '.'`)}},
		{"config map over 1 MiB", "ConfigMap", `"data":{"a":"` + big + `","b":"y"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseType(field.ErrorTypeTooLong), "[]", "Too long: may not be more than 1048576 bytes")}},
		{"secret key with a slash", "Secret", `"data":{"no/slash":"eA=="}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "data[no/slash]", `Invalid value: "no/slash": `+configKeyMsg)}},
		{"secret stringData key", "Secret", `"stringData":{"bad key":"x"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "data[bad key]", `Invalid value: "bad key": `+configKeyMsg)}},
		{"secret over 1 MiB", "Secret", `"stringData":{"a":"` + big + `","b":"y"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseType(field.ErrorTypeTooLong), "data", "Too long: may not be more than 1048576 bytes")}},
		{"TLS secret without its keys", "Secret", `"type":"kubernetes.io/tls","data":{"a":"eA=="}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data[tls.crt]", "Required value"),
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data[tls.key]", "Required value")}},
		{"docker config that is not JSON", "Secret", `"type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":"eA=="}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "data[.dockerconfigjson]", `Invalid value: "<secret contents redacted>": invalid character 'x' looking for beginning of value`)}},
		{"basic auth without username and password", "Secret", `"type":"kubernetes.io/basic-auth"`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data[username]", "Required value"),
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data[password]", "Required value")}},
		{"service account token without its account", "Secret", `"type":"kubernetes.io/service-account-token"`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "metadata.annotations[kubernetes.io/service-account.name]", "Required value")}},
		{"ssh auth without a key", "Secret", `"type":"kubernetes.io/ssh-auth"`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data[ssh-privatekey]", "Required value")}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("o%d", i)
			code, body := rt.Do(t, srv, "POST", "/api/v1/namespaces/default/"+strings.ToLower(tt.kind)+"s", `{"apiVersion":"v1","kind":"`+tt.kind+`","metadata":{"name":"`+name+`"},`+tt.object+`}`, nil)
			rt.WantInvalid(t, code, body, tt.kind, name, tt.causes...)
		})
	}
}

func TestImmutableConfigMapAndSecret_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	// rt.Do sends a PATCH as a merge patch.
	steps := []struct {
		name, method, path, body string
		wantCode                 int
		kind, object             string
		causes                   []metav1.StatusCause
	}{
		{"create config map", "POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"imm"},"data":{"a":"b"}}`, http.StatusCreated, "", "", nil},
		{"make it immutable", "PATCH", "/api/v1/namespaces/default/configmaps/imm", `{"immutable":true}`, http.StatusOK, "", "", nil},
		{"change its data", "PATCH", "/api/v1/namespaces/default/configmaps/imm", `{"data":{"a":"c"},"binaryData":{"z":"eA=="}}`, http.StatusUnprocessableEntity, "ConfigMap", "imm", []metav1.StatusCause{
			rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "data", "Forbidden: field is immutable when `immutable` is set"),
			rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "binaryData", "Forbidden: field is immutable when `immutable` is set")}},
		{"make it mutable again", "PATCH", "/api/v1/namespaces/default/configmaps/imm", `{"immutable":false}`, http.StatusUnprocessableEntity, "ConfigMap", "imm", []metav1.StatusCause{
			rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "immutable", "Forbidden: field is immutable when `immutable` is set")}},
		{"create secret", "POST", "/api/v1/namespaces/default/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"simm"},"data":{"a":"Yg=="},"immutable":true}`, http.StatusCreated, "", "", nil},
		{"change its data and immutability", "PATCH", "/api/v1/namespaces/default/secrets/simm", `{"data":{"a":"eA=="},"immutable":null}`, http.StatusUnprocessableEntity, "Secret", "simm", []metav1.StatusCause{
			rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "immutable", "Forbidden: field is immutable when `immutable` is set"),
			rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "data", "Forbidden: field is immutable when `immutable` is set")}},
		{"change its type", "PATCH", "/api/v1/namespaces/default/secrets/simm", `{"type":"kubernetes.io/tls"}`, http.StatusUnprocessableEntity, "Secret", "simm", []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "type", `Invalid value: "kubernetes.io/tls": field is immutable`),
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data[tls.crt]", "Required value"),
			rt.Cause(metav1.CauseTypeFieldValueRequired, "data[tls.key]", "Required value")}},
	}
	for _, s := range steps {
		code, body := rt.Do(t, srv, s.method, s.path, s.body, nil)
		if s.kind == "" {
			if code != s.wantCode {
				t.Fatalf("%s: got %d %s, want %d", s.name, code, body, s.wantCode)
			}
			continue
		}
		rt.WantInvalid(t, code, body, s.kind, s.object, s.causes...)
	}
}

// A ConfigMap has no status: an apply that carries one fails in the field
// manager, which kube-apiserver answers as an error it has no reason for,
// a 500 (B.8).
func TestConfigMapApplyWithStatus_B8(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, http.MethodPatch, "/api/v1/namespaces/default/configmaps/c?fieldManager=kubectl",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"1\"}\nstatus: {phase: Done}\n",
		map[string]string{"Content-Type": "application/apply-patch+yaml"})
	const want = `failed to create typed patch object (/c; /v1, Kind=ConfigMap): .status: field not declared in schema`
	st := rt.Object(t, body)
	if code != http.StatusInternalServerError || st["code"] != float64(500) || st["reason"] != nil || st["message"] != want {
		t.Errorf("got %d %s\nwant 500 without a reason, message %q", code, body, want)
	}
}
