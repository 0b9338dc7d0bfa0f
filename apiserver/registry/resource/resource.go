// Package resource is the resource.k8s.io API group (v1), the API of
// dynamic resource allocation: DeviceClasses and DeviceTaintRules
// (cluster-scoped), ResourceClaims, their templates, and the
// ResourceSlices drivers publish their devices in (D.18). kube-apiserver
// validates them and a claim's spec never changes; who allocates and
// reserves a claim is the scheduler's business, written through the
// claim's status subresource.
package resource

import (
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
)

var gv = resourcev1.SchemeGroupVersion

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{
		{GVR: gv.WithResource("deviceclasses"), Kind: "DeviceClass", Singular: "deviceclass",
			ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, ReturnDeleted: true,
			Validate: validateDeviceClass, Table: nameAgeTable},
		{GVR: gv.WithResource("devicetaintrules"), Kind: "DeviceTaintRule", Singular: "devicetaintrule",
			ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, RequireResourceVersion: true,
			StoredAs:     resourcev1beta2.SchemeGroupVersion.WithKind("DeviceTaintRule"),
			Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
			Defaults:     defaultDeviceTaintRule, Prepare: prepareDeviceTaintRule,
			Validate: validateDeviceTaintRule, ValidateStatus: validateDeviceTaintRuleStatus,
			ResetStatus: resetDeviceTaintRuleStatus, Table: deviceTaintRuleTable},
		{GVR: gv.WithResource("resourceclaims"), Kind: "ResourceClaim", Singular: "resourceclaim", Namespaced: true,
			ValidateName: apivalidation.NameIsDNSSubdomain, Defaults: defaultResourceClaim, ReturnDeleted: true,
			Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
			Validate:     validateResourceClaim, ValidateStatus: validateResourceClaimStatus,
			ResetStatus: resetResourceClaimStatus, Table: resourceClaimTable},
		{GVR: gv.WithResource("resourceclaimtemplates"), Kind: "ResourceClaimTemplate", Singular: "resourceclaimtemplate", Namespaced: true,
			ValidateName: apivalidation.NameIsDNSSubdomain, Defaults: defaultResourceClaimTemplate, ReturnDeleted: true,
			Validate: validateResourceClaimTemplate, Table: nameAgeTable},
		{GVR: gv.WithResource("resourceslices"), Kind: "ResourceSlice", Singular: "resourceslice",
			ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, Fields: resourceSliceFields, ReturnDeleted: true,
			Validate: validateResourceSlice, Warnings: resourceSliceWarnings, Table: resourceSliceTable},
	}
}

// resourceSliceFields are the fields a list of slices may be selected by:
// the node (empty for a slice of no single node), the driver and the pool.
func resourceSliceFields(obj runtime.Object, set fields.Set) {
	spec := &obj.(*resourcev1.ResourceSlice).Spec
	set[resourcev1.ResourceSliceSelectorNodeName] = ""
	if spec.NodeName != nil {
		set[resourcev1.ResourceSliceSelectorNodeName] = *spec.NodeName
	}
	set[resourcev1.ResourceSliceSelectorDriver] = spec.Driver
	set[resourcev1.ResourceSliceSelectorPoolName] = spec.Pool.Name
}

// nameAgeTable is kube's table of the kinds it prints only the name and
// age of.
var nameAgeTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn, apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		m := obj.(metav1.Object)
		return []any{m.GetName(), apiserver.Age(m.GetCreationTimestamp(), now)}
	},
}

var resourceClaimTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "State", Type: "string", Description: "A summary of the current state (allocated, pending, reserved, etc.)."},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		c := obj.(*resourcev1.ResourceClaim)
		return []any{c.Name, claimState(c), apiserver.Age(c.CreationTimestamp, now)}
	},
}

// claimState sums a claim up as kube's printer does: deleted, then
// pending or allocated, and reserved when something uses it.
func claimState(c *resourcev1.ResourceClaim) string {
	var state string
	add := func(s string) {
		if state != "" {
			state += ","
		}
		state += s
	}
	if c.DeletionTimestamp != nil {
		add("deleted")
	}
	switch {
	case c.Status.Allocation != nil:
		add("allocated")
		if len(c.Status.ReservedFor) > 0 {
			add("reserved")
		}
	case c.DeletionTimestamp == nil:
		add("pending")
	}
	return state
}

var resourceSliceTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Node", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Driver", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"]},
		{Name: "Pool", Type: "string", Description: resourcev1.ResourcePool{}.SwaggerDoc()["name"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		s := obj.(*resourcev1.ResourceSlice)
		node := ""
		if s.Spec.NodeName != nil {
			node = *s.Spec.NodeName
		}
		return []any{s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, apiserver.Age(s.CreationTimestamp, now)}
	},
}

var deviceTaintRuleTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Key", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["key"]},
		{Name: "Value", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["value"]},
		{Name: "Effect", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["effect"]},
		{Name: "TimeAdded", Type: "string", Description: resourcev1.DeviceTaint{}.SwaggerDoc()["timeAdded"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		r := obj.(*resourcev1.DeviceTaintRule)
		added := ""
		if t := r.Spec.Taint.TimeAdded; t != nil {
			added = apiserver.Age(*t, now)
		}
		return []any{r.Name, r.Spec.Taint.Key, r.Spec.Taint.Value, string(r.Spec.Taint.Effect), added, apiserver.Age(r.CreationTimestamp, now)}
	},
}
