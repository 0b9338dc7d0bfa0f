// Package admissionregistration is the admissionregistration.k8s.io/v1 API
// group: the webhook configurations and the validating and mutating
// admission policies with their bindings (D.12), all cluster-scoped, in
// the api-extensions category. The server stores and serves them with
// kube-apiserver's defaults, generation and validation, the policies' CEL
// expressions compiled by k8s.io/apiserver's admission compilers as kube
// compiles them; enforcing them is the admission plugins' work
// (apiserver/admission).
package admissionregistration

import (
	"reflect"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
)

// category is the one discovery category of every kind of the group.
const category = "api-extensions"

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	gv := admissionregistrationv1.SchemeGroupVersion
	kind := func(resource, kind, singular string) *apiserver.Resource {
		return &apiserver.Resource{GVR: gv.WithResource(resource), Kind: kind, Singular: singular, Categories: []string{category},
			ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, RequireResourceVersion: true}
	}
	vwc := kind("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", "validatingwebhookconfiguration")
	vwc.Defaults, vwc.Validate, vwc.Warnings, vwc.GenerationChanged, vwc.Table =
		defaultValidatingWebhookConfiguration, validateValidatingWebhookConfiguration, validatingWebhookConfigurationWarnings, webhooksChanged, webhookConfigurationTable
	mwc := kind("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", "mutatingwebhookconfiguration")
	mwc.Defaults, mwc.Validate, mwc.Warnings, mwc.GenerationChanged, mwc.Table =
		defaultMutatingWebhookConfiguration, validateMutatingWebhookConfiguration, mutatingWebhookConfigurationWarnings, webhooksChanged, webhookConfigurationTable
	vap := kind("validatingadmissionpolicies", "ValidatingAdmissionPolicy", "validatingadmissionpolicy")
	vap.Subresources = map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()}
	vap.Defaults, vap.Validate, vap.ValidateStatus, vap.ResetStatus, vap.Warnings, vap.Table =
		defaultValidatingAdmissionPolicy, validateValidatingAdmissionPolicy, validateValidatingAdmissionPolicyStatus, resetValidatingAdmissionPolicyStatus, staticSuffixWarnings, validatingAdmissionPolicyTable
	vapb := kind("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybinding")
	vapb.Defaults, vapb.Validate, vapb.Warnings, vapb.Table =
		defaultValidatingAdmissionPolicyBinding, validateValidatingAdmissionPolicyBinding, staticSuffixWarnings, bindingTable
	map_ := kind("mutatingadmissionpolicies", "MutatingAdmissionPolicy", "mutatingadmissionpolicy")
	map_.Defaults, map_.Validate, map_.Warnings, map_.Table =
		defaultMutatingAdmissionPolicy, validateMutatingAdmissionPolicy, staticSuffixWarnings, mutatingAdmissionPolicyTable
	mapb := kind("mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybinding")
	mapb.Defaults, mapb.Validate, mapb.Warnings, mapb.Table =
		defaultMutatingAdmissionPolicyBinding, validateMutatingAdmissionPolicyBinding, staticSuffixWarnings, bindingTable
	vap.Authorize, vapb.Authorize = authorizeValidatingAdmissionPolicy, authorizeValidatingAdmissionPolicyBinding
	map_.Authorize, mapb.Authorize = authorizeMutatingAdmissionPolicy, authorizeMutatingAdmissionPolicyBinding
	return []*apiserver.Resource{vwc, mwc, vap, vapb, map_, mapb}
}

// webhooksChanged: a webhook configuration has no spec; its generation
// counts the changes of its webhooks, compared as kube compares them,
// strictly: an empty list where there was none is a change.
func webhooksChanged(obj, old runtime.Object) bool {
	switch c := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return !reflect.DeepEqual(c.Webhooks, old.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return !reflect.DeepEqual(c.Webhooks, old.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks)
	}
	return false
}

// resetValidatingAdmissionPolicyStatus: a policy's status is written only
// through its status subresource (kube's type-checking controller writes
// it); a create starts without one.
func resetValidatingAdmissionPolicyStatus(obj, old runtime.Object) {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
	if old != nil {
		p.Status = old.(*admissionregistrationv1.ValidatingAdmissionPolicy).Status
	}
}

// Table columns, kube's (B.5).

var (
	webhooksColumn = metav1.TableColumnDefinition{Name: "Webhooks", Type: "integer",
		Description: "Webhooks indicates the number of webhooks registered in this configuration"}
	paramKindColumn = metav1.TableColumnDefinition{Name: "ParamKind", Type: "string",
		Description: "ParamKind specifies the kind of resources used to parameterize this policy"}
	policyNameColumn = metav1.TableColumnDefinition{Name: "PolicyName", Type: "string",
		Description: "PolicyName indicates the policy definition which the policy binding binded to"}
	paramRefColumn = metav1.TableColumnDefinition{Name: "ParamRef", Type: "string",
		Description: "ParamRef indicates the param resource which sets the configuration param"}
)

var webhookConfigurationTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn, webhooksColumn, apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		switch c := obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			return []any{c.Name, int64(len(c.Webhooks)), apiserver.Age(c.CreationTimestamp, now)}
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			return []any{c.Name, int64(len(c.Webhooks)), apiserver.Age(c.CreationTimestamp, now)}
		}
		return nil
	},
}

var validatingAdmissionPolicyTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
		paramKindColumn, apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		return []any{p.Name, int64(len(p.Spec.Validations)), paramKindCell(p.Spec.ParamKind), apiserver.Age(p.CreationTimestamp, now)}
	},
}

var mutatingAdmissionPolicyTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Mutations", Type: "integer", Description: "Mutation indicates the number of mutations rules defined in this configuration"},
		paramKindColumn, apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
		return []any{p.Name, int64(len(p.Spec.Mutations)), paramKindCell(p.Spec.ParamKind), apiserver.Age(p.CreationTimestamp, now)}
	},
}

var bindingTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn, policyNameColumn, paramRefColumn, apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		switch b := obj.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			return []any{b.Name, b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef), apiserver.Age(b.CreationTimestamp, now)}
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			return []any{b.Name, b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef), apiserver.Age(b.CreationTimestamp, now)}
		}
		return nil
	},
}

// paramKindCell is APIVERSION/KIND, or <unset>.
func paramKindCell(pk *admissionregistrationv1.ParamKind) string {
	if pk == nil {
		return "<unset>"
	}
	return pk.APIVersion + "/" + pk.Kind
}

// paramRefCell is NAMESPACE/NAME, */NAME when the reference names no
// namespace, the selector in its Go form when it names no object, or
// <unset>.
func paramRefCell(pr *admissionregistrationv1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		return "*/" + pr.Name
	case pr.Selector != nil:
		return pr.Selector.String()
	}
	return "<unset>"
}
