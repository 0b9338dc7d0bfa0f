package core_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

func TestNodeCreateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	tests := []struct {
		name   string
		spec   string
		causes []metav1.StatusCause
	}{
		{"unknown taint effect, reported under metadata", `{"taints":[{"key":"k","effect":"Sometimes"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "metadata.taints[0].effect", `Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`)}},
		{"taint key, value and no effect", `{"taints":[{"key":"bad key!","value":"bad value!","effect":""}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "metadata.taints[0].key", `Invalid value: "bad key!": `+namePartMsg),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "metadata.taints[0].value", `Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`),
			rt.Cause(metav1.CauseTypeFieldValueRequired, "metadata.taints[0].effect", "Required value")}},
		{"taints of one key and effect", `{"taints":[{"key":"k","effect":"NoSchedule"},{"key":"k","value":"v","effect":"NoSchedule"},{"key":"k","effect":"NoExecute"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueDuplicate, "metadata.taints[1]", `Duplicate value: {"Key":"k","Value":"v","Effect":"NoSchedule","TimeAdded":null}: taints must be unique by key and effect pair`)}},
		{"pod CIDR, from podCIDR alone", `{"podCIDR":"10.0.0.0/33"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.podCIDRs[0]", `Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`)}},
		{"pod CIDR with host bits", `{"podCIDRs":["10.0.0.1/24"]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.podCIDRs[0]", `Invalid value: "10.0.0.1/24": must not have bits set beyond the prefix length`)}},
		{"two pod CIDRs of one family", `{"podCIDRs":["10.0.0.0/24","10.1.0.0/24"]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.podCIDRs", `Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may specify no more than one CIDR for each IP family`)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("n%d", i)
			code, body := rt.Do(t, srv, "POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+name+`"},"spec":`+tt.spec+`}`, nil)
			rt.WantInvalid(t, code, body, "Node", name, tt.causes...)
		})
	}
}

func TestNodePodCIDRFromPodCIDRs_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, "POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"spec":{"podCIDR":"10.0.0.0/24"}}`, nil)
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
	srv := apiservertest.Start(t)
	node := func(spec string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"u1"},"spec":` + spec + `}`
	}
	if code, body := rt.Do(t, srv, "POST", "/api/v1/nodes", node(`{"providerID":"p1","podCIDR":"10.0.0.0/24"}`), nil); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	tests := []struct {
		name   string
		spec   string
		causes []metav1.StatusCause
	}{
		{"pod CIDR and provider ID changed", `{"providerID":"p2","podCIDR":"10.0.1.0/24"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "spec.podCIDRs", `Forbidden: node updates may not change podCIDR except from "" to valid`),
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.providerID", "Invalid value: null: field cannot be modified once set")}},
		{"provider ID cleared", `{"podCIDR":"10.0.0.0/24"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.providerID", "Invalid value: null: field cannot be cleared once set")}},
		{"bad taint, reported once", `{"providerID":"p1","podCIDR":"10.0.0.0/24","taints":[{"key":"k","effect":"Bad"}]}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseTypeFieldValueNotSupported, "metadata.taints[0].effect", `Unsupported value: "Bad": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`)}},
		{"external ID", `{"providerID":"p1","podCIDR":"10.0.0.0/24","externalID":"x"}`, []metav1.StatusCause{
			rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "spec.externalID", "Forbidden: may not be updated")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := rt.Do(t, srv, "PUT", "/api/v1/nodes/u1", node(tt.spec), nil)
			rt.WantInvalid(t, code, body, "Node", "u1", tt.causes...)
		})
	}
}
