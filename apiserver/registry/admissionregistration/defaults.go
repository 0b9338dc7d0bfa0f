package admissionregistration

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// The defaults kube gives the group's kinds in v1 (D.12): a webhook fails
// closed after 10 seconds, matches equivalent requests and every namespace
// and object, and a mutating one is not called again; a rule covers every
// scope; a service is reached on port 443; a policy fails closed, and its
// match constraints, like a binding's match resources, match equivalent
// requests and everything their selectors leave out.

func defaultValidatingWebhookConfiguration(obj runtime.Object) {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, &w.ClientConfig, w.Rules)
	}
}

func defaultMutatingWebhookConfiguration(obj runtime.Object) {
	c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, &w.ClientConfig, w.Rules)
		setDefault(&w.ReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy)
	}
}

// defaultWebhook fills the fields both kinds of webhook share.
func defaultWebhook(failure **admissionregistrationv1.FailurePolicyType, match **admissionregistrationv1.MatchPolicyType,
	namespaces, objects **metav1.LabelSelector, timeout **int32, cc *admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) {
	setDefault(failure, admissionregistrationv1.Fail)
	setDefault(match, admissionregistrationv1.Equivalent)
	setDefault(namespaces, metav1.LabelSelector{})
	setDefault(objects, metav1.LabelSelector{})
	setDefault(timeout, 10)
	if cc.Service != nil {
		setDefault(&cc.Service.Port, 443)
	}
	for i := range rules {
		setDefault(&rules[i].Scope, admissionregistrationv1.AllScopes)
	}
}

func defaultValidatingAdmissionPolicy(obj runtime.Object) {
	s := &obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec
	setDefault(&s.FailurePolicy, admissionregistrationv1.Fail)
	defaultMatchResources(s.MatchConstraints)
}

func defaultMutatingAdmissionPolicy(obj runtime.Object) {
	s := &obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec
	setDefault(&s.FailurePolicy, admissionregistrationv1.Fail)
	defaultMatchResources(s.MatchConstraints)
}

func defaultValidatingAdmissionPolicyBinding(obj runtime.Object) {
	defaultMatchResources(obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec.MatchResources)
}

func defaultMutatingAdmissionPolicyBinding(obj runtime.Object) {
	defaultMatchResources(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec.MatchResources)
}

// defaultMatchResources fills a policy's match constraints or a binding's
// match resources, when given.
func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	setDefault(&m.MatchPolicy, admissionregistrationv1.Equivalent)
	setDefault(&m.NamespaceSelector, metav1.LabelSelector{})
	setDefault(&m.ObjectSelector, metav1.LabelSelector{})
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			setDefault(&rules[i].Scope, admissionregistrationv1.AllScopes)
		}
	}
}

// setDefault points *p at v when it is nil.
func setDefault[T any](p **T, v T) {
	if *p == nil {
		*p = ptr.To(v)
	}
}
