package networking

import (
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// maxControllerLength is the longest spec.controller kube takes.
const maxControllerLength = 250

// ingressClassResource is the IngressClass kind; the class annotated
// ingressclass.kubernetes.io/is-default-class "true" is the default
// the DefaultIngressClass admission plugin gives.
func ingressClassResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: gv.WithResource("ingressclasses"), Kind: "IngressClass", Singular: "ingressclass",
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, Defaults: defaultIngressClass,
		Validate: validateIngressClass, Table: ingressClassTable}
}

// defaultIngressClass: parameters without a scope are the cluster's.
func defaultIngressClass(obj runtime.Object) {
	if p := obj.(*networkingv1.IngressClass).Spec.Parameters; p != nil && p.Scope == nil {
		scope := networkingv1.IngressClassParametersReferenceScopeCluster
		p.Scope = &scope
	}
}

// validateIngressClass: a controller that is a domain-prefixed path of at
// most 250 characters and never changes, and parameters naming a kind
// and an object, in a namespace exactly when their scope is Namespace.
func validateIngressClass(obj, old runtime.Object) field.ErrorList {
	ic := obj.(*networkingv1.IngressClass)
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if o, ok := old.(*networkingv1.IngressClass); ok {
		errs = append(errs, apivalidation.ValidateImmutableField(ic.Spec.Controller, o.Spec.Controller, spec.Child("controller"))...)
	}
	if len(ic.Spec.Controller) > maxControllerLength {
		errs = append(errs, field.TooLong(spec.Child("controller"), "", maxControllerLength))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(spec.Child("controller"), ic.Spec.Controller)...)
	return declarativeLast(append(errs, validateParameters(ic.Spec.Parameters, spec.Child("parameters"))...))
}

var parameterScopes = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}

func validateParameters(p *networkingv1.IngressClassParametersReference, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	if p.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*p.APIGroup) {
			errs = append(errs, field.Invalid(path.Child("apiGroup"), *p.APIGroup, msg))
		}
	}
	errs = append(errs, pathSegment(path.Child("kind"), p.Kind)...)
	errs = append(errs, pathSegment(path.Child("name"), p.Name)...)
	if p.Scope == nil {
		return append(errs, field.Required(path.Child("scope"), ""))
	}
	switch *p.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if p.Namespace == nil {
			return append(errs, field.Required(path.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		}
		for _, msg := range apivalidation.ValidateNamespaceName(*p.Namespace, false) {
			errs = append(errs, field.Invalid(path.Child("namespace"), *p.Namespace, msg))
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if p.Namespace != nil {
			errs = append(errs, field.Forbidden(path.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("scope"), *p.Scope, parameterScopes))
	}
	return errs
}

// ingressClassTable has the columns of kubectl get ingressclass; the
// default class's name says so.
var ingressClassTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
		{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		ic := obj.(*networkingv1.IngressClass)
		name := ic.Name
		if ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
			name += " (default)"
		}
		params := "<none>"
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind
			if p.APIGroup != nil {
				params += "." + *p.APIGroup
			}
			params += "/" + p.Name
		}
		return []any{name, ic.Spec.Controller, params, apiserver.Age(ic.CreationTimestamp, now)}
	},
}
