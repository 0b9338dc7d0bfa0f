package apiserver

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

func TestRoleValidation_D5(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	required, invalidV := metav1.CauseTypeFieldValueRequired, metav1.CauseTypeFieldValueInvalid
	const (
		rolePath    = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
		clusterPath = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	)
	tests := []struct {
		name   string
		kind   string
		body   string
		causes []metav1.StatusCause
	}{
		{"no verbs", "Role", `"rules":[{"apiGroups":[""],"resources":["pods"]}]`, []metav1.StatusCause{
			cause(required, "rules[0].verbs", "Required value")}},
		{"no groups or resources", "Role", `"rules":[{"verbs":["get"]}]`, []metav1.StatusCause{
			cause(required, "rules[0].apiGroups", "Required value: resource rules must supply at least one api group"),
			cause(required, "rules[0].resources", "Required value: resource rules must supply at least one resource")}},
		{"non-resource URLs in a Role, with resources", "Role", `"rules":[{"verbs":["get"],"nonResourceURLs":["/x"],"resources":["pods"]}]`, []metav1.StatusCause{
			cause(invalidV, "rules[0].nonResourceURLs", `Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`),
			cause(invalidV, "rules[0].nonResourceURLs", `Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`)}},
		{"non-resource URLs with API groups", "ClusterRole", `"rules":[{"verbs":["get"],"nonResourceURLs":["/x"],"apiGroups":[""]}]`, []metav1.StatusCause{
			cause(invalidV, "rules[0].nonResourceURLs", `Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`)}},
		{"missing verbs come last", "ClusterRole", `"rules":[{"nonResourceURLs":["/x"]},{}]`, []metav1.StatusCause{
			cause(required, "rules[1].apiGroups", "Required value: resource rules must supply at least one api group"),
			cause(required, "rules[1].resources", "Required value: resource rules must supply at least one resource"),
			cause(required, "rules[0].verbs", "Required value"),
			cause(required, "rules[1].verbs", "Required value")}},
		{"aggregation rule without selectors", "ClusterRole", `"aggregationRule":{}`, []metav1.StatusCause{
			cause(required, "aggregationRule.clusterRoleSelectors", "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil")}},
		{"aggregation rule selectors", "ClusterRole", `"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"bad key!":"v"}},{"matchExpressions":[{"key":"a","operator":"Bad"}]}]}`, []metav1.StatusCause{
			cause(invalidV, "aggregationRule.clusterRoleSelectors[0].matchLabels", `Invalid value: "bad key!": `+namePartMsg),
			cause(invalidV, "aggregationRule.clusterRoleSelectors[0]", "Invalid value: null: invalid label selector."),
			cause(invalidV, "aggregationRule.clusterRoleSelectors[1].matchExpressions[0].operator", `Invalid value: "Bad": not a valid selector operator`),
			cause(invalidV, "aggregationRule.clusterRoleSelectors[1]", "Invalid value: null: invalid label selector.")}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("r%d", i)
			path := rolePath
			if tt.kind == "ClusterRole" {
				path = clusterPath
			}
			code, body := ts.send(t, "POST", path, "", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"`+tt.kind+`","metadata":{"name":"`+name+`"},`+tt.body+`}`)
			msg, causes := invalid(tt.kind+".rbac.authorization.k8s.io", name, tt.causes...)
			wantStatus(t, code, body, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg, causes)
		})
	}
}
