package rbac

import (
	"iter"
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
// owner rule with resourceNames covers only those names. missing lists the
// uncovered permissions in kube's order, nil when there are none.
//
// The answers are those of component-helpers' validation.Covers, which
// tests hold Covers to, but it is not called: it builds maps and slices
// for every comparison of two rules, and the check runs on user requests,
// where a writer allowed to create Roles could send one of 1,000 rules of
// 100 resources and have the server compare each of its 300,000
// permissions with every rule the writer holds. Here a permission is
// matched against the owner rules without allocating. Two more things
// differ from calling validation.Covers on the whole sets, and neither
// changes the answer: a servant rule is broken down one permission at a
// time and Covers stops at 1,000 uncovered ones, so that a rule of many
// verbs, resources and names costs neither the memory of its whole
// breakdown nor a list of everything it lacks; and a servant rule that one
// owner rule covers whole (as cluster-admin's do) is not broken down at
// all.
func Covers(owner, servant []rbacv1.PolicyRule) (ok bool, missing []rbacv1.PolicyRule) {
	for i := range servant {
		r := &servant[i]
		if wholeRuleCovered(owner, r) {
			continue
		}
		for p := range permissions(r) {
			if anyCovers(owner, &p) {
				continue
			}
			missing = append(missing, p.rule())
			if len(missing) >= maxMissing {
				return false, missing
			}
		}
	}
	return len(missing) == 0, missing
}

// permission is one verb on one group and resource, named when named is
// set; or, when nonResource is set, one verb on one path.
type permission struct {
	verb, group, resource, name, url string
	named, nonResource               bool
}

// rule is p as the single-permission rule validation.BreakdownRule makes.
func (p *permission) rule() rbacv1.PolicyRule {
	if p.nonResource {
		return rbacv1.PolicyRule{Verbs: []string{p.verb}, NonResourceURLs: []string{p.url}}
	}
	r := rbacv1.PolicyRule{Verbs: []string{p.verb}, APIGroups: []string{p.group}, Resources: []string{p.resource}}
	if p.named {
		r.ResourceNames = []string{p.name}
	}
	return r
}

// permissions yields r's single permissions in the order of
// validation.BreakdownRule, without building the whole list: for each
// group, resource and verb, the resource unnamed or once per name; then
// each path with each verb.
func permissions(r *rbacv1.PolicyRule) iter.Seq[permission] {
	return func(yield func(permission) bool) { eachPermission(r, yield) }
}

func eachPermission(r *rbacv1.PolicyRule, yield func(permission) bool) {
	for _, group := range r.APIGroups {
		for _, res := range r.Resources {
			for _, verb := range r.Verbs {
				p := permission{verb: verb, group: group, resource: res}
				if len(r.ResourceNames) == 0 && !yield(p) {
					return
				}
				p.named = true
				for _, name := range r.ResourceNames {
					p.name = name
					if !yield(p) {
						return
					}
				}
			}
		}
	}
	for _, url := range r.NonResourceURLs {
		for _, verb := range r.Verbs {
			if !yield(permission{verb: verb, url: url, nonResource: true}) {
				return
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

// anyCovers reports whether some owner rule covers p: its verb, and its
// group, resource and name, or its path.
func anyCovers(owner []rbacv1.PolicyRule, p *permission) bool {
	for i := range owner {
		o := &owner[i]
		if !has(o.Verbs, p.verb) {
			continue
		}
		// An owner rule with names covers only a named permission.
		if len(o.ResourceNames) > 0 && !(p.named && contains(o.ResourceNames, p.name)) {
			continue
		}
		if p.nonResource {
			if urlCovers(o.NonResourceURLs, p.url) {
				return true
			}
			continue
		}
		if has(o.APIGroups, p.group) && resourceCovers(o.Resources, p.resource) {
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
	if !ok {
		return false
	}
	for _, o := range owner {
		if len(o) == len(sub)+2 && strings.HasPrefix(o, "*/") && o[2:] == sub {
			return true
		}
	}
	return false
}

// urlCovers reports whether owner paths cover url: the same path, or an
// entry ending in "*" whose stem prefixes it (so "/healthz/*" covers
// "/healthz/x" and "/healthz/*").
func urlCovers(owner []string, url string) bool {
	for _, u := range owner {
		if u == url || strings.HasSuffix(u, "*") && strings.HasPrefix(url, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
