package authz

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// htmlEscaper escapes the characters kube-apiserver escapes in the
// generated part of a 403 message.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// ForbiddenMessage returns the sentence kube-apiserver puts in a 403 for a,
// before the resource prefix and the reason:
//
//	User "bob" cannot get resource "pods" in API group "" in the namespace "default"
//	User "bob" cannot list resource "nodes" in API group "" at the cluster scope
//	User "bob" cannot get path "/metrics"
//
// It is not HTML-escaped; Forbidden escapes it.
func ForbiddenMessage(a Attributes) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q",
			a.User.Name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope",
		a.User.Name, a.Verb, resource, a.APIGroup)
}

// Forbidden returns the 403 error kube-apiserver answers a denied request
// with. Its ErrStatus is the metav1.Status to write (with the header
// X-Content-Type-Options: nosniff): for a resource request the message is
//
//	pods "app" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "default"
//
// followed by ": reason" when reason is not empty, and Details are
// {Group: the API group, Kind: the resource plural, Name: the name}; for a
// non-resource request the message starts "forbidden: " and Details are
// empty. Kind and APIVersion are set, so the Status marshals to the exact
// body kube-apiserver sends. &, < and > in the generated sentence are HTML-escaped; the reason
// is kept as given.
func Forbidden(a Attributes, reason string) *apierrors.StatusError {
	msg := htmlEscaper.Replace(ForbiddenMessage(a))
	if reason != "" {
		msg += ": " + reason
	}
	var gr schema.GroupResource
	if a.ResourceRequest {
		gr = schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	}
	err := apierrors.NewForbidden(gr, a.Name, messageError(msg))
	err.ErrStatus.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return err
}

// messageError is an error whose text is exactly its value.
type messageError string

func (e messageError) Error() string { return string(e) }
