package core

import (
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Nodes: their defaults, validation (D.5), selectable fields and table.

func nodeResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node", Singular: "node", ShortNames: []string{"no"},
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource(), "proxy": nodeProxy()}, ValidateName: apivalidation.NameIsDNSSubdomain,
		Defaults: defaultNode, Validate: validateNode, ResetStatus: resetNodeStatus, Fields: nodeFields, Table: nodeTable}
}

func nodeFields(obj runtime.Object, set fields.Set) {
	set["spec.unschedulable"] = strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)
}

func resetNodeStatus(obj, old runtime.Object) {
	if old == nil {
		return // a node registers with its status, as kubelets do
	}
	obj.(*corev1.Node).Status = old.(*corev1.Node).Status
}

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
		errs = append(errs, apiserver.OneOf(p.Child("effect"), t.Effect, taintEffects)...)
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

var (
	nodeInfoDoc   = corev1.NodeSystemInfo{}.SwaggerDoc()
	nodeStatusDoc = corev1.NodeStatus{}.SwaggerDoc()
)

var nodeTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		apiserver.AgeColumn,
		{Name: "Version", Type: "string", Description: nodeInfoDoc["kubeletVersion"]},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: nodeStatusDoc["addresses"]},
		{Name: "External-IP", Type: "string", Priority: 1, Description: nodeStatusDoc["addresses"]},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: nodeInfoDoc["osImage"]},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: nodeInfoDoc["kernelVersion"]},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: nodeInfoDoc["containerRuntimeVersion"]},
	},
	Cells: nodeCells,
}

// nodeCells shows a node Ready only when its Ready condition is True, and
// NotReady when that condition is False or Unknown; without the condition
// the node is Unknown.
func nodeCells(obj runtime.Object, now time.Time) []any {
	n := obj.(*corev1.Node)
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	seen := map[string]bool{}
	var roles []string
	for k, v := range n.Labels {
		role := ""
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			role = strings.TrimPrefix(k, "node-role.kubernetes.io/")
		case k == "kubernetes.io/role":
			role = v
		}
		if role != "" && !seen[role] {
			seen[role] = true
			roles = append(roles, role)
		}
	}
	sort.Strings(roles)
	addr := func(t corev1.NodeAddressType) string {
		for _, a := range n.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
		return "<none>"
	}
	orUnknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	info := n.Status.NodeInfo
	kernel := orUnknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return []any{n.Name, status, apiserver.OrNone(strings.Join(roles, ",")), apiserver.Age(n.CreationTimestamp, now), info.KubeletVersion,
		addr(corev1.NodeInternalIP), addr(corev1.NodeExternalIP), orUnknown(info.OSImage), kernel, orUnknown(info.ContainerRuntimeVersion)}
}
