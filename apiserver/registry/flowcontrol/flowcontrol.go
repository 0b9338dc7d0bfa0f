// Package flowcontrol is the flowcontrol.apiserver.k8s.io API group:
// FlowSchemas, which sort requests into priority levels, and
// PriorityLevelConfigurations, which say how much of the server each level
// may use (D.20). kube-apiserver's mandatory and suggested configuration
// exists from the start, as kube's configuration producer keeps it, with
// the Dangling condition kube's configuration consumer writes. kubegate
// stores and validates them and enforces nothing: no request is queued or
// refused for them.
package flowcontrol

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{
		GVR: flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas"), Kind: "FlowSchema", Singular: "flowschema",
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, Defaults: defaultFlowSchema,
		Validate: validateFlowSchema, ValidateStatus: validateFlowSchemaStatusUpdate, ResetStatus: resetFlowSchemaStatus,
		Table: flowSchemaTable, Initial: initialFlowSchemas,
	}, {
		GVR: flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations"), Kind: "PriorityLevelConfiguration",
		Singular: "prioritylevelconfiguration", Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, Defaults: defaultPriorityLevel,
		Validate: validatePriorityLevel, ValidateStatus: validatePriorityLevelStatusUpdate, ResetStatus: resetPriorityLevelStatus,
		Table: priorityLevelTable, Initial: initialPriorityLevels,
	}}
}

func resetFlowSchemaStatus(obj, old runtime.Object) {
	fs := obj.(*flowcontrolv1.FlowSchema)
	fs.Status = flowcontrolv1.FlowSchemaStatus{}
	if old != nil {
		fs.Status = *old.(*flowcontrolv1.FlowSchema).Status.DeepCopy()
	}
}

func resetPriorityLevelStatus(obj, old runtime.Object) {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
	if old != nil {
		pl.Status = *old.(*flowcontrolv1.PriorityLevelConfiguration).Status.DeepCopy()
	}
}

// danglingType is the condition kube's configuration consumer keeps on
// every schema (apiserver/server keeps it in kubegate).
const danglingType = flowcontrolv1.FlowSchemaConditionDangling

// initialFlowSchemas are kube-apiserver's mandatory and suggested
// FlowSchemas, with their autoupdate-spec annotation (D.20).
func initialFlowSchemas() []runtime.Object {
	var objs []runtime.Object
	for _, fs := range append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
		fs = fs.DeepCopy()
		defaultFlowSchema(fs)
		objs = append(objs, fs)
	}
	return objs
}

// bootstrapPriorityLevels are kube-apiserver's mandatory and suggested
// priority levels, defaulted.
func bootstrapPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
		pl = pl.DeepCopy()
		defaultPriorityLevel(pl)
		pls = append(pls, pl)
	}
	return pls
}

func initialPriorityLevels() []runtime.Object {
	var objs []runtime.Object
	for _, pl := range bootstrapPriorityLevels() {
		objs = append(objs, pl)
	}
	return objs
}

// mandatoryFlowSchema returns the defaulted spec the mandatory schema name
// must keep, or nil.
func mandatoryFlowSchema(name string) *flowcontrolv1.FlowSchemaSpec {
	for _, fs := range bootstrap.MandatoryFlowSchemas {
		if fs.Name == name {
			fs = fs.DeepCopy()
			defaultFlowSchema(fs)
			return &fs.Spec
		}
	}
	return nil
}

// mandatoryPriorityLevel returns the defaulted spec the mandatory level
// name must keep, or nil.
func mandatoryPriorityLevel(name string) *flowcontrolv1.PriorityLevelConfigurationSpec {
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		if pl.Name == name {
			pl = pl.DeepCopy()
			defaultPriorityLevel(pl)
			return &pl.Spec
		}
	}
	return nil
}
