package admissionregistration

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authz"
)

// What a policy or binding's writer must be allowed to read, as kube's
// policy and binding strategies check once the object is valid (D.12):
// a policy's writer must be allowed to get every object of its paramKind,
// a binding's writer the objects its paramRef names, of its policy's
// paramKind; members of system:masters are not checked. A create is
// checked when the object names parameters, an update when it changes
// them (or, for a binding, its policy).

// authorizeValidatingAdmissionPolicy is the Authorize of the validating
// policies.
func authorizeValidatingAdmissionPolicy(w *apiserver.Writer, obj, old runtime.Object) field.ErrorList {
	kind := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.ParamKind
	var oldKind *admissionregistrationv1.ParamKind
	if old != nil {
		oldKind = old.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.ParamKind
	}
	return authorizeParamKind(w, kind, oldKind, old != nil)
}

// authorizeMutatingAdmissionPolicy is the Authorize of the mutating
// policies.
func authorizeMutatingAdmissionPolicy(w *apiserver.Writer, obj, old runtime.Object) field.ErrorList {
	kind := obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.ParamKind
	var oldKind *admissionregistrationv1.ParamKind
	if old != nil {
		oldKind = old.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.ParamKind
	}
	return authorizeParamKind(w, kind, oldKind, old != nil)
}

func authorizeParamKind(w *apiserver.Writer, kind, oldKind *admissionregistrationv1.ParamKind, update bool) field.ErrorList {
	if kind == nil || update && oldKind != nil && *oldKind == *kind || w.Superuser() {
		return nil
	}
	a := paramAttributes(w, kind)
	a.Name, a.Namespace = "*", "*"
	ok, err := w.Allowed(a)
	if err == nil && !ok {
		err = fmt.Errorf(`user %v must have "get" permission on all objects of the referenced paramKind (kind=%s, apiVersion=%s)`,
			kubeUser(w), kind.Kind, kind.APIVersion)
	}
	if err != nil {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "paramKind"), err.Error())}
	}
	return nil
}

// kubeUser is the writer as kube's messages print a user.
func kubeUser(w *apiserver.Writer) *user.DefaultInfo {
	u := w.User()
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// authorizeValidatingAdmissionPolicyBinding is the Authorize of the
// validating policies' bindings.
func authorizeValidatingAdmissionPolicyBinding(w *apiserver.Writer, obj, old runtime.Object) field.ErrorList {
	b := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	if b.Spec.ParamRef == nil || w.Superuser() {
		return nil
	}
	if old != nil {
		o := old.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		if sameParamRef(o.Spec.ParamRef, b.Spec.ParamRef) && o.Spec.PolicyName == b.Spec.PolicyName {
			return nil
		}
	}
	p, err := w.Get(admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"), "", b.Spec.PolicyName)
	var kind *admissionregistrationv1.ParamKind
	if err == nil {
		kind = p.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.ParamKind
	}
	return authorizeParamRef(w, b.Spec.PolicyName, err == nil, kind, b.Spec.ParamRef)
}

// authorizeMutatingAdmissionPolicyBinding is the Authorize of the mutating
// policies' bindings.
func authorizeMutatingAdmissionPolicyBinding(w *apiserver.Writer, obj, old runtime.Object) field.ErrorList {
	b := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
	if b.Spec.ParamRef == nil || w.Superuser() {
		return nil
	}
	if old != nil {
		o := old.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
		if sameParamRef(o.Spec.ParamRef, b.Spec.ParamRef) && o.Spec.PolicyName == b.Spec.PolicyName {
			return nil
		}
	}
	p, err := w.Get(admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies"), "", b.Spec.PolicyName)
	var kind *admissionregistrationv1.ParamKind
	if err == nil {
		kind = p.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.ParamKind
	}
	return authorizeParamRef(w, b.Spec.PolicyName, err == nil, kind, b.Spec.ParamRef)
}

// sameParamRef reports whether an update keeps a binding's paramRef as
// kube compares them, field by field with the pointers' addresses: a
// paramRef with a selector or a parameterNotFoundAction, which every
// valid one has, is never the same, so kube checks every update of a
// binding that has one.
func sameParamRef(old, ref *admissionregistrationv1.ParamRef) bool {
	return old != nil && old.Name == ref.Name && old.Namespace == ref.Namespace &&
		old.Selector == nil && ref.Selector == nil && old.ParameterNotFoundAction == nil && ref.ParameterNotFoundAction == nil
}

// authorizeParamRef checks that the writer may read the objects ref
// names: get the one named, or list them when it names none (a
// selector), in its namespace or in all. They are of the resource of
// policy's paramKind kind, or of every resource when the policy is
// missing (found false) or its paramKind cannot be resolved, which the
// refusal then says.
func authorizeParamRef(w *apiserver.Writer, policy string, found bool, kind *admissionregistrationv1.ParamKind, ref *admissionregistrationv1.ParamRef) field.ErrorList {
	a := authz.Attributes{Verb: "get", ResourceRequest: true, Resource: "*", APIGroup: "*", APIVersion: "*", Name: ref.Name, Namespace: ref.Namespace}
	if ref.Name == "" {
		a.Verb = "list"
	}
	unresolved := ""
	if kind != nil {
		gv, err := schema.ParseGroupVersion(kind.APIVersion)
		if err != nil {
			unresolved = "parse"
		} else {
			a.APIGroup, a.APIVersion = gv.Group, gv.Version
			if gvr, ok := w.ResourceFor(gv.WithKind(kind.Kind)); ok {
				a.Resource = gvr.Resource
			} else {
				unresolved = "resolve"
			}
		}
	}
	ok, err := w.Allowed(a)
	switch {
	case err != nil:
		err = fmt.Errorf("failed to authorize request: %w", err)
	case ok:
		return nil
	case !found:
		err = fmt.Errorf(`unable to get policy %s to determine minimum required permissions and user %v does not have "%s" permission for all groups, versions and resources`,
			policy, kubeUser(w), a.Verb)
	case unresolved != "":
		// kube prints its own ParamKind, a struct of the two strings
		err = fmt.Errorf(`unable to %s paramKind &{%s %s} to determine minimum required permissions and user %v does not have "%s" permission for all groups, versions and resources`,
			unresolved, kind.APIVersion, kind.Kind, kubeUser(w), a.Verb)
	default:
		err = fmt.Errorf(`user %v does not have "%s" permission on the object referenced by paramRef`, kubeUser(w), a.Verb)
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "paramRef"), err.Error())}
}

// paramAttributes is a get of kind's resource: of every resource of its
// group and version when the server does not serve the kind, of every
// group and version when its apiVersion does not parse.
func paramAttributes(w *apiserver.Writer, kind *admissionregistrationv1.ParamKind) authz.Attributes {
	a := authz.Attributes{Verb: "get", ResourceRequest: true, Resource: "*", APIGroup: "*", APIVersion: "*"}
	if gv, err := schema.ParseGroupVersion(kind.APIVersion); err == nil {
		a.APIGroup, a.APIVersion = gv.Group, gv.Version
		if gvr, ok := w.ResourceFor(gv.WithKind(kind.Kind)); ok {
			a.Resource = gvr.Resource
		}
	}
	return a
}
