package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

func TestNodeCreateValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tests := []struct {
		name   string
		spec   string
		causes []metav1.StatusCause
	}{
		{"unknown taint effect, reported under metadata", `{"taints":[{"key":"k","effect":"Sometimes"}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "metadata.taints[0].effect", `Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`)}},
		{"taint key, value and no effect", `{"taints":[{"key":"bad key!","value":"bad value!","effect":""}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "metadata.taints[0].key", `Invalid value: "bad key!": `+namePartMsg),
			cause(metav1.CauseTypeFieldValueInvalid, "metadata.taints[0].value", `Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`),
			cause(metav1.CauseTypeFieldValueRequired, "metadata.taints[0].effect", "Required value")}},
		{"taints of one key and effect", `{"taints":[{"key":"k","effect":"NoSchedule"},{"key":"k","value":"v","effect":"NoSchedule"},{"key":"k","effect":"NoExecute"}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueDuplicate, "metadata.taints[1]", `Duplicate value: {"Key":"k","Value":"v","Effect":"NoSchedule","TimeAdded":null}: taints must be unique by key and effect pair`)}},
		{"pod CIDR, from podCIDR alone", `{"podCIDR":"10.0.0.0/33"}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.podCIDRs[0]", `Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`)}},
		{"pod CIDR with host bits", `{"podCIDRs":["10.0.0.1/24"]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.podCIDRs[0]", `Invalid value: "10.0.0.1/24": must not have bits set beyond the prefix length`)}},
		{"two pod CIDRs of one family", `{"podCIDRs":["10.0.0.0/24","10.1.0.0/24"]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.podCIDRs", `Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may specify no more than one CIDR for each IP family`)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("n%d", i)
			code, body := ts.send(t, "POST", "/api/v1/nodes", "", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+name+`"},"spec":`+tt.spec+`}`)
			msg, causes := invalid("Node", name, tt.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}

func TestNodePodCIDRFromPodCIDRs_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	code, body := ts.send(t, "POST", "/api/v1/nodes", "", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"spec":{"podCIDR":"10.0.0.0/24"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var n struct{ Spec struct{ PodCIDRs []string } }
	if err := json.Unmarshal(body, &n); err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.0.0.0/24"}; !reflect.DeepEqual(n.Spec.PodCIDRs, want) {
		t.Errorf("podCIDRs = %v, want %v", n.Spec.PodCIDRs, want)
	}
}

func TestNodeUpdateValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	node := func(spec string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"u1"},"spec":` + spec + `}`
	}
	if code, body := ts.send(t, "POST", "/api/v1/nodes", "", node(`{"providerID":"p1","podCIDR":"10.0.0.0/24"}`)); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	tests := []struct {
		name   string
		spec   string
		causes []metav1.StatusCause
	}{
		{"pod CIDR and provider ID changed", `{"providerID":"p2","podCIDR":"10.0.1.0/24"}`, []metav1.StatusCause{
			cause(causeForbidden, "spec.podCIDRs", `Forbidden: node updates may not change podCIDR except from "" to valid`),
			cause(metav1.CauseTypeFieldValueInvalid, "spec.providerID", "Invalid value: null: field cannot be modified once set")}},
		{"provider ID cleared", `{"podCIDR":"10.0.0.0/24"}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueInvalid, "spec.providerID", "Invalid value: null: field cannot be cleared once set")}},
		{"bad taint, reported once", `{"providerID":"p1","podCIDR":"10.0.0.0/24","taints":[{"key":"k","effect":"Bad"}]}`, []metav1.StatusCause{
			cause(metav1.CauseTypeFieldValueNotSupported, "metadata.taints[0].effect", `Unsupported value: "Bad": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`)}},
		{"external ID", `{"providerID":"p1","podCIDR":"10.0.0.0/24","externalID":"x"}`, []metav1.StatusCause{
			cause(causeForbidden, "spec.externalID", "Forbidden: may not be updated")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := ts.send(t, "PUT", "/api/v1/nodes/u1", "", node(tt.spec))
			msg, causes := invalid("Node", "u1", tt.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}
