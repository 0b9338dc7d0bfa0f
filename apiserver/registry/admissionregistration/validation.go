package admissionregistration

// The kinds' checks; each accepts what it is given until its rules are in.

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateValidatingWebhookConfiguration(obj, old runtime.Object) field.ErrorList  { return nil }
func validateMutatingWebhookConfiguration(obj, old runtime.Object) field.ErrorList    { return nil }
func validateValidatingAdmissionPolicy(obj, old runtime.Object) field.ErrorList       { return nil }
func validateValidatingAdmissionPolicyStatus(obj, old runtime.Object) field.ErrorList { return nil }
func validateValidatingAdmissionPolicyBinding(obj, old runtime.Object) field.ErrorList {
	return nil
}
func validateMutatingAdmissionPolicy(obj, old runtime.Object) field.ErrorList        { return nil }
func validateMutatingAdmissionPolicyBinding(obj, old runtime.Object) field.ErrorList { return nil }
func validatingWebhookConfigurationWarnings(obj, old runtime.Object) []string        { return nil }
func mutatingWebhookConfigurationWarnings(obj, old runtime.Object) []string          { return nil }
func staticSuffixWarnings(obj, old runtime.Object) []string                          { return nil }
