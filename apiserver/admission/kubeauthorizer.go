package admission

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// KubeAuthorizer answers as k8s.io/apiserver's plugins ask an authorizer,
// for the authorizer variable of a policy's CEL expressions: the same
// question put to kubegate's authorizer, its answer given back. It knows
// no conditional decisions, as kube's RBAC authorizer knows none.
func KubeAuthorizer(a authz.Authorizer) authorizer.Authorizer {
	return kubeAuthorizer{a}
}

type kubeAuthorizer struct{ a authz.Authorizer }

func (k kubeAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := authn.User{}
	if info := attrs.GetUser(); info != nil {
		u = authn.User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups(), Extra: info.GetExtra()}
	}
	d, reason, err := k.a.Authorize(ctx, authz.Attributes{
		User: u, Verb: attrs.GetVerb(), Namespace: attrs.GetNamespace(), APIGroup: attrs.GetAPIGroup(),
		APIVersion: attrs.GetAPIVersion(), Resource: attrs.GetResource(), Subresource: attrs.GetSubresource(),
		Name: attrs.GetName(), ResourceRequest: attrs.IsResourceRequest(), Path: attrs.GetPath(),
	})
	switch d {
	case authz.Allow:
		return authorizer.DecisionAllow, reason, err
	case authz.Deny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}

func (k kubeAuthorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(k.Authorize(ctx, attrs))
}

func (kubeAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
