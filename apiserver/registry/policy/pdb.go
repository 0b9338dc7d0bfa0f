// Package policy is the policy/v1 API group: PodDisruptionBudgets, stored
// with kube-apiserver's validation (G.12). The disruption controller writes
// their status, and the pods' eviction subresource, served with pods,
// reads them (D.9).
package policy

import (
	"slices"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{podDisruptionBudgetResource()}
}

// podDisruptionBudgetResource is the PodDisruptionBudget kind of the
// group, with its status subresource.
func podDisruptionBudgetResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), Kind: "PodDisruptionBudget",
		Singular: "poddisruptionbudget", Namespaced: true, ShortNames: []string{"pdb"}, Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true,
		Prepare: preparePodDisruptionBudget, Validate: validatePodDisruptionBudget,
		ValidateStatus: validatePodDisruptionBudgetStatus, ResetStatus: resetPodDisruptionBudgetStatus, Table: podDisruptionBudgetTable}
}

// pdbV1beta1Label is the label key kube reserves for the selectors that
// stand for policy/v1beta1's "match all" and "match none".
const pdbV1beta1Label = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match"

// preparePodDisruptionBudget drops the reserved label from a new or
// changed selector, unless the selector is exactly policy/v1's form of
// v1beta1's "match none", as kube does so that no user selector mixes it
// with its own terms.
func preparePodDisruptionBudget(obj, old runtime.Object) {
	sel := obj.(*policyv1.PodDisruptionBudget).Spec.Selector
	if o, ok := old.(*policyv1.PodDisruptionBudget); ok && apiequality.Semantic.DeepEqual(o.Spec.Selector, sel) {
		return
	}
	if sel == nil || apiequality.Semantic.DeepEqual(sel, matchNoneSelector) {
		return
	}
	sel.MatchExpressions = slices.DeleteFunc(sel.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool { return r.Key == pdbV1beta1Label })
}

// matchNoneSelector is policy/v1's form of a policy/v1beta1 PDB's empty
// selector, which matches no pod.
var matchNoneSelector = &metav1.LabelSelector{
	MatchExpressions: []metav1.LabelSelectorRequirement{{Key: pdbV1beta1Label, Operator: metav1.LabelSelectorOpExists}}}

func resetPodDisruptionBudgetStatus(obj, old runtime.Object) {
	p := obj.(*policyv1.PodDisruptionBudget)
	p.Status = policyv1.PodDisruptionBudgetStatus{}
	if old != nil {
		p.Status = old.(*policyv1.PodDisruptionBudget).Status
	}
}

// validatePodDisruptionBudget is kube's ValidatePodDisruptionBudgetSpec:
// not both minAvailable and maxUnavailable, each a count or a percentage
// not above 100%, a valid selector (an update may keep label values an
// older server let in) and a known unhealthy pod eviction policy.
func validatePodDisruptionBudget(obj, old runtime.Object) field.ErrorList {
	s := &obj.(*policyv1.PodDisruptionBudget).Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	if s.MinAvailable != nil && s.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(path, toInternalPDBSpec(s), "minAvailable and maxUnavailable cannot be both set"))
	}
	for _, v := range []struct {
		name string
		val  *intstr.IntOrString
	}{{"minAvailable", s.MinAvailable}, {"maxUnavailable", s.MaxUnavailable}} {
		if v.val == nil {
			continue
		}
		errs = append(errs, apiserver.IntOrPercentUpTo100(*v.val, path.Child(v.name))...)
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if o, ok := old.(*policyv1.PodDisruptionBudget); ok && o.Spec.Selector != nil {
		opts.AllowInvalidLabelValueInSelector = len(metav1validation.ValidateLabelSelector(o.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, opts, path.Child("selector"))...)
	if p := s.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.IfHealthyBudget && *p != policyv1.AlwaysAllow {
		errs = append(errs, field.NotSupported(path.Child("unhealthyPodEvictionPolicy"), *p,
			[]string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}))
	}
	return errs
}

// internalPDBSpec is kube's internal PodDisruptionBudgetSpec, which the
// error for setting both minAvailable and maxUnavailable shows with its
// Go field names.
type internalPDBSpec struct {
	MinAvailable               *intstr.IntOrString
	Selector                   *metav1.LabelSelector
	MaxUnavailable             *intstr.IntOrString
	UnhealthyPodEvictionPolicy *policyv1.UnhealthyPodEvictionPolicyType
}

func toInternalPDBSpec(s *policyv1.PodDisruptionBudgetSpec) internalPDBSpec {
	return internalPDBSpec{MinAvailable: s.MinAvailable, Selector: s.Selector, MaxUnavailable: s.MaxUnavailable,
		UnhealthyPodEvictionPolicy: s.UnhealthyPodEvictionPolicy}
}

// validatePodDisruptionBudgetStatus is kube's
// ValidatePodDisruptionBudgetStatusUpdate for policy/v1: valid conditions
// and no negative count.
func validatePodDisruptionBudgetStatus(obj, _ runtime.Object) field.ErrorList {
	st := &obj.(*policyv1.PodDisruptionBudget).Status
	path := field.NewPath("status")
	errs := metav1validation.ValidateConditions(st.Conditions, path.Child("conditions"))
	for _, c := range []struct {
		name string
		n    int32
	}{{"disruptionsAllowed", st.DisruptionsAllowed}, {"currentHealthy", st.CurrentHealthy}, {"desiredHealthy", st.DesiredHealthy}, {"expectedPods", st.ExpectedPods}} {
		errs = append(errs, apiserver.NonNegative(c.n, path.Child(c.name))...)
	}
	return errs
}

// podDisruptionBudgetTable has the columns of kubectl get pdb.
var podDisruptionBudgetTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Min Available", Type: "string", Description: "The minimum number of pods that must be available."},
		{Name: "Max Unavailable", Type: "string", Description: "The maximum number of pods that may be unavailable."},
		{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		p := obj.(*policyv1.PodDisruptionBudget)
		return []any{p.Name, intOrStringCell(p.Spec.MinAvailable), intOrStringCell(p.Spec.MaxUnavailable),
			int64(p.Status.DisruptionsAllowed), apiserver.Age(p.CreationTimestamp, now)}
	},
}

func intOrStringCell(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}
