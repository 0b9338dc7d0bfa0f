package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// maxMissing bounds how many uncovered permissions Covers lists; a rule
// set that lacks more is refused all the same.
const maxMissing = 1000

// Covers reports whether owner holds every permission servant grants, as
// kube-apiserver decides it for escalation checks: each servant rule is
// broken down into single permissions (one verb on one group and resource,
// with at most one name; or one verb on one path), and each must be
// covered by one owner rule. Wildcards cover in the owner only: owner
// "*/status" covers "pods/status", but servant "*" needs owner "*". An
// owner rule with resourceNames covers only those names. missing lists up
// to 1,000 uncovered permissions.
func Covers(owner, servant []rbacv1.PolicyRule) (ok bool, missing []rbacv1.PolicyRule) {
	for i := range servant {
		r := &servant[i]
		if wholeRuleCovered(owner, r) {
			continue
		}
		for _, verb := range r.Verbs {
			for _, group := range r.APIGroups {
				for _, res := range r.Resources {
					if len(r.ResourceNames) == 0 {
						if !anyCovers(owner, verb, group, res, "", false) {
							missing = append(missing, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{res}})
						}
					}
					for _, name := range r.ResourceNames {
						if !anyCovers(owner, verb, group, res, name, true) {
							missing = append(missing, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{res}, ResourceNames: []string{name}})
						}
					}
					if len(missing) >= maxMissing {
						return false, missing
					}
				}
			}
			for _, url := range r.NonResourceURLs {
				if !anyCoversURL(owner, verb, url) {
					missing = append(missing, rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{url}})
					if len(missing) >= maxMissing {
						return false, missing
					}
				}
			}
		}
	}
	return len(missing) == 0, missing
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

// anyCovers reports whether some owner rule covers one verb on one
// group/resource, named when named is set.
func anyCovers(owner []rbacv1.PolicyRule, verb, group, res, name string, named bool) bool {
	for i := range owner {
		o := &owner[i]
		if !has(o.Verbs, verb) || !has(o.APIGroups, group) || !resourceCovers(o.Resources, res) {
			continue
		}
		if len(o.ResourceNames) == 0 || named && contains(o.ResourceNames, name) {
			return true
		}
	}
	return false
}

// resourceCovers reports whether owner resources cover res: "*", res
// itself, or "*/sub" when res is "resource/sub".
func resourceCovers(owner []string, res string) bool {
	if contains(owner, rbacv1.ResourceAll) || contains(owner, res) {
		return true
	}
	_, sub, ok := strings.Cut(res, "/")
	return ok && contains(owner, "*/"+sub)
}

// anyCoversURL reports whether some owner rule covers one verb on path
// url: the same path, or an owner entry ending in "*" whose stem prefixes
// it (so "/healthz/*" covers "/healthz/x" and "/healthz/*").
func anyCoversURL(owner []rbacv1.PolicyRule, verb, url string) bool {
	for i := range owner {
		o := &owner[i]
		if !has(o.Verbs, verb) || len(o.ResourceNames) > 0 {
			continue
		}
		for _, u := range o.NonResourceURLs {
			if u == url || strings.HasSuffix(u, "*") && strings.HasPrefix(url, strings.TrimRight(u, "*")) {
				return true
			}
		}
	}
	return false
}
