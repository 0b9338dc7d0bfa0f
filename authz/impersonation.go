package authz

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/kubegate/kubegate/authn"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The impersonation headers, as k8s.io/api/authentication/v1 names them.
const (
	ImpersonateUserHeader        = "Impersonate-User"
	ImpersonateUIDHeader         = "Impersonate-Uid"
	ImpersonateGroupHeader       = "Impersonate-Group"
	ImpersonateExtraHeaderPrefix = "Impersonate-Extra-"
)

// Service-account identities, as the service-account authenticator builds them.
const (
	serviceAccountUserPrefix   = "system:serviceaccount:"
	serviceAccountsGroup       = "system:serviceaccounts"
	serviceAccountsGroupPrefix = "system:serviceaccounts:"
	authenticationGroup        = "authentication.k8s.io"
)

// Impersonation is what a request's Impersonate-* headers ask for.
type Impersonation struct {
	// User is the user name to act as; never empty in a parsed request.
	User string
	// UID is the UID to act as; "" when not asked for.
	UID string
	// Groups are the groups to act with, in header order; nil when none
	// were asked for (a service account then gets its own groups).
	Groups []string
	// Extra holds the extra values to act with, under lower-cased,
	// percent-decoded keys; nil when none were asked for.
	Extra map[string][]string
}

// ParseImpersonation reads the Impersonate-* headers of h. It returns
// ok false when h asks to impersonate nobody, and a 400 error when it
// asks for groups, a UID or extra values without a user.
func ParseImpersonation(h http.Header) (im Impersonation, ok bool, err error) {
	im.User = h.Get(ImpersonateUserHeader)
	im.UID = h.Get(ImpersonateUIDHeader)
	im.Groups = h.Values(ImpersonateGroupHeader)
	for name, values := range h {
		if len(name) <= len(ImpersonateExtraHeaderPrefix) ||
			!strings.EqualFold(name[:len(ImpersonateExtraHeaderPrefix)], ImpersonateExtraHeaderPrefix) {
			continue
		}
		key := unescapeExtraKey(strings.ToLower(name[len(ImpersonateExtraHeaderPrefix):]))
		if im.Extra == nil {
			im.Extra = map[string][]string{}
		}
		im.Extra[key] = append(im.Extra[key], values...)
	}
	if len(im.Groups) == 0 {
		im.Groups = nil
	}
	if im.User == "" {
		if im.UID != "" || im.Groups != nil || im.Extra != nil {
			return Impersonation{}, false, apierrors.NewBadRequest(
				fmt.Sprintf("requested %s without impersonating a user", im.describe()))
		}
		return Impersonation{}, false, nil
	}
	return im, true, nil
}

// unescapeExtraKey percent-decodes an extra key, keeping it as given when
// it is not valid percent-encoding.
func unescapeExtraKey(k string) string {
	u, err := url.PathUnescape(k)
	if err != nil {
		return k
	}
	return u
}

// describe lists what is asked for, for the 400 message.
func (im Impersonation) describe() string {
	var items []string
	for _, g := range im.Groups {
		items = append(items, fmt.Sprintf("group %q", g))
	}
	for _, k := range im.extraKeys() {
		for _, v := range im.Extra[k] {
			items = append(items, fmt.Sprintf("extra %q=%q", k, v))
		}
	}
	if im.UID != "" {
		items = append(items, fmt.Sprintf("uid %q", im.UID))
	}
	return "[" + strings.Join(items, ", ") + "]"
}

func (im Impersonation) extraKeys() []string {
	keys := make([]string, 0, len(im.Extra))
	for k := range im.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Checks returns the authorization checks impersonating im requires of
// requester, one per item asked for, each with verb "impersonate": the user
// (resource users, or serviceaccounts in its namespace for a
// system:serviceaccount:NS:NAME user), each group (groups), each extra value
// (userextras/KEY in authentication.k8s.io, named by the value, keys in
// sorted order) and the UID (uids in authentication.k8s.io).
func (im Impersonation) Checks(requester authn.User) []Attributes {
	check := func(group, resource, sub, ns, name string) Attributes {
		a := Attributes{
			User: requester, Verb: "impersonate", ResourceRequest: true,
			APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name,
		}
		if group == authenticationGroup {
			a.APIVersion = "v1"
		}
		return a
	}
	var checks []Attributes
	if ns, name, ok := splitServiceAccount(im.User); ok {
		checks = append(checks, check("", "serviceaccounts", "", ns, name))
	} else {
		checks = append(checks, check("", "users", "", "", im.User))
	}
	for _, g := range im.Groups {
		checks = append(checks, check("", "groups", "", "", g))
	}
	for _, k := range im.extraKeys() {
		for _, v := range im.Extra[k] {
			checks = append(checks, check(authenticationGroup, "userextras", k, "", v))
		}
	}
	if im.UID != "" {
		checks = append(checks, check(authenticationGroup, "uids", "", "", im.UID))
	}
	return checks
}

// Result returns the user the request acts as once im is authorized. A
// service account asked for without groups gets system:serviceaccounts and
// system:serviceaccounts:NS. system:authenticated is added unless the
// groups already hold it or system:unauthenticated; the anonymous user
// gets system:unauthenticated instead. UID and Extra are exactly as asked;
// nothing of the requester carries over.
func (im Impersonation) Result() authn.User {
	groups := slices.Clone(im.Groups)
	if ns, _, ok := splitServiceAccount(im.User); ok && len(im.Groups) == 0 {
		groups = []string{serviceAccountsGroup, serviceAccountsGroupPrefix + ns}
	}
	if im.User == authn.Anonymous {
		if !slices.Contains(groups, authn.AllUnauthenticated) {
			groups = append(groups, authn.AllUnauthenticated)
		}
	} else if !slices.Contains(groups, authn.AllAuthenticated) && !slices.Contains(groups, authn.AllUnauthenticated) {
		groups = append(groups, authn.AllAuthenticated)
	}
	var extra map[string][]string
	if len(im.Extra) > 0 {
		extra = make(map[string][]string, len(im.Extra))
		for k, v := range im.Extra {
			extra[k] = slices.Clone(v)
		}
	}
	return authn.User{Name: im.User, UID: im.UID, Groups: groups, Extra: extra}
}

// Impersonate authorizes requester to act as im, one check at a time (see
// Checks), and returns the resulting user (see Result). The first check
// that az does not allow, or that fails with an error, gives the 403 error
// kube-apiserver answers with, built from that check's attributes.
func Impersonate(ctx context.Context, az Authorizer, requester authn.User, im Impersonation) (authn.User, error) {
	for _, a := range im.Checks(requester) {
		d, reason, err := az.Authorize(ctx, a)
		if err != nil || d != Allow {
			return authn.User{}, Forbidden(a, reason)
		}
	}
	return im.Result(), nil
}

// DeleteImpersonationHeaders removes every Impersonate-* header from h,
// comparing names case-insensitively.
func DeleteImpersonationHeaders(h http.Header) {
	const prefix = "Impersonate-"
	for name := range h {
		if len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
			delete(h, name)
		}
	}
}

// splitServiceAccount splits a system:serviceaccount:NS:NAME user name,
// requiring NS to be a valid namespace name and NAME a valid service
// account name, as kube-apiserver does.
func splitServiceAccount(user string) (ns, name string, ok bool) {
	rest, found := strings.CutPrefix(user, serviceAccountUserPrefix)
	if !found {
		return "", "", false
	}
	ns, name, found = strings.Cut(rest, ":")
	if !found || strings.Contains(name, ":") {
		return "", "", false
	}
	if len(validation.IsDNS1123Label(ns)) != 0 || len(validation.IsDNS1123Subdomain(name)) != 0 {
		return "", "", false
	}
	return ns, name, true
}
