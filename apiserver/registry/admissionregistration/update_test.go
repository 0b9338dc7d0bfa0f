package admissionregistration

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// An update is held to what the stored configuration already met: side
// effects an older server let in, and match conditions left unchanged,
// pass; a create of the same is refused (D.12).
func TestWebhookUpdateKeepsWhatWasStored_D12(t *testing.T) {
	t.Parallel()
	config := func(sideEffects admissionregistrationv1.SideEffectClass, condition string, timeout int32) *admissionregistrationv1.ValidatingWebhookConfiguration {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "w.example.com",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://h")}, SideEffects: &sideEffects,
				AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To(timeout),
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "m", Expression: condition}}}}}
		defaultValidatingWebhookConfiguration(c)
		return c
	}
	stored := config("Some", "object.nope +", 10)
	if errs := validateValidatingWebhookConfiguration(stored, nil); len(errs) != 2 {
		t.Errorf("create: got %v, want the side effects and the condition refused", errs)
	}
	if errs := validateValidatingWebhookConfiguration(config("Some", "object.nope +", 20), stored); len(errs) != 0 {
		t.Errorf("update of the timeout: %v, want none", errs)
	}
	errs := validateValidatingWebhookConfiguration(config("Some", "object.other +", 20), stored)
	if len(errs) != 1 || errs[0].Field != "webhooks[0].matchConditions[0].expression" {
		t.Errorf("update of the condition: %v, want the condition refused", errs)
	}
	if errs := validateValidatingWebhookConfiguration(config("Some", "true", 20), config("None", "true", 10)); len(errs) != 1 {
		t.Errorf("update to Some: %v, want it refused", errs)
	}
}

// A policy's status write is checked on its own: expression warnings need
// their text and a JSONPath (D.12).
func TestPolicyStatusValidation_D12(t *testing.T) {
	t.Parallel()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{Status: admissionregistrationv1.ValidatingAdmissionPolicyStatus{
		TypeChecking: &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{
			{FieldRef: "spec.validations[0].expression", Warning: "ok"}, {FieldRef: "spec.validations[", Warning: ""}}}}}
	errs := validateValidatingAdmissionPolicyStatus(p, p)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if len(fields) != 2 || fields[0] != "status.typeChecking.expressionWarnings[1].warning" || fields[1] != "status.typeChecking.expressionWarnings[1].fieldRef" {
		t.Errorf("got %v, want the second warning's text and fieldRef refused", errs)
	}
}
