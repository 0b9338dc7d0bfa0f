// Package storage is the storage.k8s.io/v1 API group, stored with
// kube-apiserver's defaults, validation and tables (D.17): StorageClasses
// and VolumeAttributesClasses, which claims name; VolumeAttachments, which
// attach a volume to a node and whose status the attacher writes; and what
// CSI drivers publish about themselves (CSIDrivers), the nodes they run on
// (CSINodes) and the capacity they offer (CSIStorageCapacities).
// kube-apiserver validates these and acts on nothing else; the
// DefaultStorageClass and StorageObjectInUseProtection admission plugins
// (apiserver/admission) read and mark them.
package storage

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	gv := storagev1.SchemeGroupVersion
	status := func() map[string]apiserver.Subresource {
		return map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()}
	}
	return []*apiserver.Resource{
		{GVR: gv.WithResource("csidrivers"), Kind: "CSIDriver", Singular: "csidriver", ReturnDeleted: true,
			ValidateName: apivalidation.NameIsDNSSubdomain, Defaults: defaultCSIDriver, RequireResourceVersion: true,
			Prepare: prepareCSIDriver, Validate: validateCSIDriver, ValidateUpdate: validateCSIDriverUpdate,
			Warnings: csiDriverWarnings, Table: csiDriverTable},
		{GVR: gv.WithResource("csinodes"), Kind: "CSINode", Singular: "csinode", Subresources: status(), ReturnDeleted: true,
			ValidateName: apivalidation.NameIsDNSSubdomain, Validate: validateCSINode, ValidateUpdate: validateCSINodeUpdate,
			ValidateStatus: validateCSINodeStatus, PrepareSubresource: prepareCSINodeStatus, ResetStatus: resetCSINodeStatus, Table: csiNodeTable},
		{GVR: gv.WithResource("csistoragecapacities"), Kind: "CSIStorageCapacity", Singular: "csistoragecapacity", Namespaced: true,
			ValidateName: apivalidation.NameIsDNSSubdomain, Validate: validateCSIStorageCapacity,
			ValidateUpdate: validateCSIStorageCapacityUpdate},
		{GVR: gv.WithResource("storageclasses"), Kind: "StorageClass", Singular: "storageclass", ShortNames: []string{"sc"}, ReturnDeleted: true,
			ValidateName: apivalidation.NameIsDNSSubdomain, Defaults: defaultStorageClass,
			Validate: validateStorageClass, ValidateUpdate: validateStorageClassUpdate, Table: storageClassTable},
		{GVR: gv.WithResource("volumeattachments"), Kind: "VolumeAttachment", Singular: "volumeattachment", Subresources: status(), ReturnDeleted: true,
			ValidateName: apivalidation.NameIsDNSSubdomain, Validate: validateVolumeAttachment, ValidateUpdate: validateVolumeAttachmentUpdate,
			ResetStatus: resetVolumeAttachmentStatus, Table: volumeAttachmentTable},
		{GVR: gv.WithResource("volumeattributesclasses"), Kind: "VolumeAttributesClass", Singular: "volumeattributesclass", ReturnDeleted: true,
			ShortNames: []string{"vac"}, ValidateName: apivalidation.NameIsDNSSubdomain,
			Validate: validateVolumeAttributesClass, Table: volumeAttributesClassTable},
	}
}

const (
	// maxParameters and maxParametersSize bound a class's parameters: how
	// many, and their keys' and values' bytes together.
	maxParameters     = 512
	maxParametersSize = 256 * 1024
)

// validateDriverName checks a provisioner or a VolumeAttributesClass's
// driver: a qualified name once lowercased. Whether it is there at all is
// checked by the caller, where kube checks it.
func validateDriverName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateParameters checks a class's parameters: at most maxParameters,
// no empty key, at most maxParametersSize in all, and at least one unless
// allowEmpty.
func validateParameters(params map[string]string, allowEmpty bool, path *field.Path) field.ErrorList {
	if len(params) > maxParameters {
		return field.ErrorList{field.TooLong(path, "", maxParameters)}
	}
	var errs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(path, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxParametersSize {
		errs = append(errs, field.TooLong(path, "", maxParametersSize))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(path, "must contain at least one key/value pair"))
	}
	return errs
}

// validateCSIDriverName is kube's check of a CSI driver's name where a
// field holds one: required, at most 63 characters, a DNS subdomain once
// lowercased.
func validateCSIDriverName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if len(name) > 63 {
		errs = append(errs, field.TooLong(path, "", 63))
	}
	return append(errs, caselessSubdomain(name, path)...)
}

// caselessSubdomain checks that name is a DNS subdomain once lowercased.
func caselessSubdomain(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// immutable is the error of kube's declarative immutability checks, which
// name no value and come after the others.
func immutable(path *field.Path) *field.Error { return field.Invalid(path, nil, "field is immutable") }

// validateTopologyTerms checks a class's allowedTopologies: each label
// requirement has a valid key, values, none twice, and no two terms are
// the same.
func validateTopologyTerms(terms []corev1.TopologySelectorTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var seen []map[string]map[string]bool
	for i, term := range terms {
		exprs := map[string]map[string]bool{}
		for j, req := range term.MatchLabelExpressions {
			p := path.Index(i).Child("matchLabelExpressions").Index(j)
			values := map[string]bool{}
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), ""))
			}
			for k, v := range req.Values {
				if values[v] {
					errs = append(errs, field.Duplicate(p.Child("values").Index(k), v))
				}
				values[v] = true
			}
			errs = append(errs, metav1validation.ValidateLabelName(req.Key, p.Child("key"))...)
			if _, ok := exprs[req.Key]; ok {
				errs = append(errs, field.Duplicate(p.Child("key"), req.Key))
			}
			exprs[req.Key] = values
		}
		for _, other := range seen {
			if sameTerm(exprs, other) {
				errs = append(errs, field.Duplicate(path.Index(i).Child("matchLabelExpressions"), ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}

func sameTerm(a, b map[string]map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || len(va) != len(vb) {
			return false
		}
		for v := range va {
			if !vb[v] {
				return false
			}
		}
	}
	return true
}
