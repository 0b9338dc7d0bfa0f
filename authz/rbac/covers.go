package rbac

import (
	"iter"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// maxMissing bounds how many uncovered permissions Covers lists; a rule
// set that lacks more is refused all the same.
const maxMissing = 1000

// Covers reports whether owner holds every permission servant grants, as
// kube-apiserver decides it for escalation checks: each servant rule is
// broken down into single permissions (one verb on one group and resource,
// with at most one name; or one verb on one path), and each must be
// covered by one owner rule, judged by component-helpers'
// validation.Covers. Wildcards cover in the owner only: owner "*/status"
// covers "pods/status", but servant "*" needs owner "*". An owner rule
// with resourceNames covers only those names. missing lists the uncovered
// permissions in kube's order, nil when there are none.
//
// Two things differ from calling validation.Covers on the whole sets, and
// neither changes the answer: a servant rule is broken down one
// permission at a time and Covers stops at 1,000 uncovered ones, so that
// a rule of many verbs, resources and names costs neither the memory of
// its whole breakdown nor a list of everything it lacks; and a servant
// rule that one owner rule covers whole (as cluster-admin's do) is not
// broken down at all.
func Covers(owner, servant []rbacv1.PolicyRule) (ok bool, missing []rbacv1.PolicyRule) {
	for i := range servant {
		r := &servant[i]
		if wholeRuleCovered(owner, r) {
			continue
		}
		for p := range permissions(r) {
			if covered, _ := validation.Covers(owner, []rbacv1.PolicyRule{p}); covered {
				continue
			}
			missing = append(missing, p)
			if len(missing) >= maxMissing {
				return false, missing
			}
		}
	}
	return len(missing) == 0, missing
}

// permissions yields r's single permissions in the order of
// validation.BreakdownRule, without building the whole list: for each
// group, resource and verb, the resource unnamed or once per name; then
// each path with each verb.
func permissions(r *rbacv1.PolicyRule) iter.Seq[rbacv1.PolicyRule] {
	return func(yield func(rbacv1.PolicyRule) bool) {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					p := rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{res}, Verbs: []string{verb}}
					if len(r.ResourceNames) == 0 && !yield(p) {
						return
					}
					for _, name := range r.ResourceNames {
						p.ResourceNames = []string{name}
						if !yield(p) {
							return
						}
					}
				}
			}
		}
		for _, url := range r.NonResourceURLs {
			for _, verb := range r.Verbs {
				if !yield(rbacv1.PolicyRule{NonResourceURLs: []string{url}, Verbs: []string{verb}}) {
					return
				}
			}
		}
	}
}

// wholeRuleCovered is a fast path: one owner rule that covers every verb,
// group, resource, name and path of r at once (as cluster-admin's do)
// covers r without breaking it down.
func wholeRuleCovered(owner []rbacv1.PolicyRule, r *rbacv1.PolicyRule) bool {
	needResources := len(r.APIGroups) > 0 && len(r.Resources) > 0
	needURLs := len(r.NonResourceURLs) > 0
	for i := range owner {
		o := &owner[i]
		if len(o.ResourceNames) > 0 || !contains(o.Verbs, rbacv1.VerbAll) {
			continue
		}
		if needResources && !(contains(o.APIGroups, rbacv1.APIGroupAll) && contains(o.Resources, rbacv1.ResourceAll)) {
			continue
		}
		if needURLs && !contains(o.NonResourceURLs, rbacv1.NonResourceAll) {
			continue
		}
		return true
	}
	return false
}
