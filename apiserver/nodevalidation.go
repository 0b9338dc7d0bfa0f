package apiserver

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Node defaults and validation (D.5).

// defaultNode keeps podCIDR and podCIDRs together as kube's conversion
// does: podCIDR wins when the two differ, and is podCIDRs[0] on the way out.
func defaultNode(obj runtime.Object) {
	spec := &obj.(*corev1.Node).Spec
	if spec.PodCIDR != "" && (len(spec.PodCIDRs) == 0 || spec.PodCIDRs[0] != spec.PodCIDR) {
		spec.PodCIDRs = []string{spec.PodCIDR}
	}
	spec.PodCIDR = ""
	if len(spec.PodCIDRs) > 0 {
		spec.PodCIDR = spec.PodCIDRs[0]
	}
}

// taintEffects are listed in kube's order, which is not sorted.
var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// validateNode checks a Node, and on an update (old not nil) what may
// not change. kube reports taint errors under metadata.taints, not
// spec.taints.
func validateNode(obj, old runtime.Object) field.ErrorList {
	n := obj.(*corev1.Node)
	errs := validateTaints(n.Spec.Taints, field.NewPath("metadata", "taints"))
	errs = append(errs, validatePodCIDRs(n.Spec.PodCIDRs)...)
	if old == nil {
		return errs
	}
	o := old.(*corev1.Node)
	// nodeAddress is how kube shows a duplicated address: its internal
	// type, JSON with Go field names.
	type nodeAddress struct{ Type, Address string }
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), nodeAddress{string(a.Type), a.Address}))
		}
		seen[a] = true
	}
	// A controller may give a node its pod CIDRs once; after that they
	// stay. Each changed entry is one more error.
	if len(o.Spec.PodCIDRs) > 0 {
		msg := `node updates may not change podCIDR except from "" to valid`
		if len(o.Spec.PodCIDRs) != len(n.Spec.PodCIDRs) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), msg))
		} else {
			for i := range o.Spec.PodCIDRs {
				if o.Spec.PodCIDRs[i] != n.Spec.PodCIDRs[i] {
					errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), msg))
				}
			}
		}
	}
	// Likewise the provider ID; kube shows no value.
	switch {
	case o.Spec.ProviderID != "" && n.Spec.ProviderID != "" && o.Spec.ProviderID != n.Spec.ProviderID:
		errs = append(errs, field.Invalid(field.NewPath("spec", "providerID"), nil, "field cannot be modified once set"))
	case o.Spec.ProviderID != "" && n.Spec.ProviderID == "":
		errs = append(errs, field.Invalid(field.NewPath("spec", "providerID"), nil, "field cannot be cleared once set"))
	}
	if n.Spec.DoNotUseExternalID != o.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}

// validateTaints checks each taint's key, value and effect, and that no
// two have the same key and effect.
func validateTaints(taints []corev1.Taint, path *field.Path) field.ErrorList {
	// taint is how kube shows a duplicated taint: its internal type, JSON
	// with Go field names.
	type taint struct {
		Key       string
		Value     string
		Effect    corev1.TaintEffect
		TimeAdded *metav1.Time
	}
	var errs field.ErrorList
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[keyEffect]bool{}
	for i, t := range taints {
		p := path.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		errs = append(errs, OneOf(p.Child("effect"), t.Effect, taintEffects)...)
		k := keyEffect{t.Key, t.Effect}
		if seen[k] {
			dup := field.Duplicate(p, taint{t.Key, t.Value, t.Effect, t.TimeAdded})
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
		}
		seen[k] = true
	}
	return errs
}

// validatePodCIDRs requires CIDRs, at most one of each IP family.
func validatePodCIDRs(cidrs []string) field.ErrorList {
	path := field.NewPath("spec", "podCIDRs")
	var errs field.ErrorList
	for i, c := range cidrs {
		errs = append(errs, validation.IsValidCIDRForLegacyField(path.Index(i), c, true, nil)...)
	}
	if len(cidrs) > 1 {
		families := map[bool]bool{}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil {
				families[p.Addr().Unmap().Is4()] = true
			}
		}
		if len(families) < 2 || len(cidrs) > 2 {
			errs = append(errs, field.Invalid(path, cidrs, "may specify no more than one CIDR for each IP family"))
		}
	}
	return errs
}
