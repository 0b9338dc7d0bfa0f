package admissionpolicystatus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers/admissionpolicystatus"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/internal/testwait"
)

func deploymentPolicy(name string, expressions ...string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
		},
	}
	for _, e := range expressions {
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: e})
	}
	return p
}

// TestTypeCheckingWarnsOfExpressionsTheSchemaRefutes_D12: the controller
// type-checks a policy's expressions against the Deployment schema the
// server publishes: a comparison of the replica count with a string is a
// warning on that expression's field, a sound expression none; the
// status records the generation it checked, and a new generation is
// checked again.
func TestTypeCheckingWarnsOfExpressionsTheSchemaRefutes_D12(t *testing.T) {
	s := controllertest.Start(t, admissionpolicystatus.Descriptor)
	ctx := context.Background()
	policies := s.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	p, err := policies.Create(ctx, deploymentPolicy("replicas", "object.spec.replicas <= 5", `object.spec.replicas > "1"`), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checked := func(generation int64) *admissionregistrationv1.ValidatingAdmissionPolicy {
		var got *admissionregistrationv1.ValidatingAdmissionPolicy
		testwait.For(t, 30*time.Second, fmt.Sprintf("generation %d checked", generation), func() (bool, string) {
			got, err = policies.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return got.Status.ObservedGeneration == generation, fmt.Sprintf("%+v", got.Status)
		})
		return got
	}
	got := checked(p.Generation)
	if got.Status.TypeChecking == nil {
		t.Fatal("the status has no typeChecking")
	}
	w := got.Status.TypeChecking.ExpressionWarnings
	if len(w) != 1 || w[0].FieldRef != "spec.validations[1].expression" || !strings.Contains(w[0].Warning, "no matching overload") {
		t.Fatalf("expression warnings = %+v, want one on spec.validations[1].expression saying no overload matches", w)
	}
	if !strings.Contains(w[0].Warning, "apps/v1, Kind=Deployment") {
		t.Errorf("the warning %q does not name the kind it was checked against", w[0].Warning)
	}

	got.Spec.Validations = got.Spec.Validations[:1]
	p, err = policies.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got = checked(p.Generation)
	if tc := got.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) != 0 {
		t.Errorf("a sound policy has warnings: %+v", tc.ExpressionWarnings)
	}
	var managers []string
	for _, m := range got.ManagedFields {
		managers = append(managers, m.Manager+"/"+m.Subresource)
	}
	if !strings.Contains(strings.Join(managers, " "), admissionpolicystatus.FieldManager+"/status") {
		t.Errorf("managed fields %v: the status is not the controller's", managers)
	}
}
