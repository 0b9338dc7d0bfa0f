package rbac

import (
	"strings"

	"github.com/kubegate/kubegate/authz"
	rbacv1 "k8s.io/api/rbac/v1"
)

// RuleAllows reports whether rule grants the request a, with
// kube-apiserver's matching:
//
//   - verbs holds "*" or the verb;
//   - for a resource request, apiGroups holds "*" or the group; resources
//     holds "*", the resource (or "resource/subresource") exactly, or
//     "*/subresource"; and resourceNames is empty or holds the name;
//   - for a non-resource request, nonResourceURLs holds "*", the path, or
//     an entry ending in "*" whose stem prefixes the path.
//
// Matching is case-sensitive. "pods" does not cover "pods/status", and a
// rule with resourceNames never allows a request without a name.
func RuleAllows(a *authz.Attributes, rule *rbacv1.PolicyRule) bool {
	if !has(rule.Verbs, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule.NonResourceURLs, a.Path)
	}
	return has(rule.APIGroups, a.APIGroup) &&
		resourceMatches(rule.Resources, a.Resource, a.Subresource) &&
		(len(rule.ResourceNames) == 0 || contains(rule.ResourceNames, a.Name))
}

// has reports whether list holds "*" or s.
func has(list []string, s string) bool {
	for _, v := range list {
		if v == s || v == rbacv1.VerbAll {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func resourceMatches(rules []string, resource, sub string) bool {
	for _, r := range rules {
		if r == rbacv1.ResourceAll {
			return true
		}
		if sub == "" {
			if r == resource {
				return true
			}
			continue
		}
		// "resource/sub" or "*/sub", compared without building the string.
		head, tail, ok := strings.Cut(r, "/")
		if ok && tail == sub && (head == resource || head == rbacv1.ResourceAll) {
			return true
		}
	}
	return false
}

func nonResourceURLMatches(urls []string, path string) bool {
	for _, u := range urls {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
