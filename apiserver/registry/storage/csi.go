package storage

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// tokenInSecretsWarning is kube's advice to a driver that asks for tokens
// without saying where they go.
const tokenInSecretsWarning = "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"

// defaultCSIDriver gives a driver kube's defaults (D.17): attach required,
// no pod info, no capacity, fsGroup by fstype, persistent volumes, no
// republish, no SELinux mount, no scheduling hold.
func defaultCSIDriver(obj runtime.Object) {
	s := &obj.(*storagev1.CSIDriver).Spec
	setBool := func(p **bool, v bool) {
		if *p == nil {
			*p = &v
		}
	}
	setBool(&s.AttachRequired, true)
	setBool(&s.PodInfoOnMount, false)
	setBool(&s.StorageCapacity, false)
	if s.FSGroupPolicy == nil {
		p := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
		s.FSGroupPolicy = &p
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = append(s.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent)
	}
	setBool(&s.RequiresRepublish, false)
	setBool(&s.SELinuxMount, false)
	setBool(&s.PreventPodSchedulingIfMissing, false)
}

func validateCSIDriver(obj, _ runtime.Object) field.ErrorList {
	s := &obj.(*storagev1.CSIDriver).Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	for _, b := range []struct {
		name string
		v    *bool
	}{{"attachedRequired", s.AttachRequired}, {"podInfoOnMount", s.PodInfoOnMount}, {"storageCapacity", s.StorageCapacity}} {
		if b.v == nil {
			errs = append(errs, field.Required(path.Child(b.name), ""))
		}
	}
	if p := s.FSGroupPolicy; p != nil && *p != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy && *p != storagev1.FileFSGroupPolicy && *p != storagev1.NoneFSGroupPolicy {
		errs = append(errs, field.NotSupported(path.Child("fsGroupPolicy"), p, []string{string(storagev1.FileFSGroupPolicy),
			string(storagev1.NoneFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)}))
	}
	errs = append(errs, validateTokenRequests(s.TokenRequests, path.Child("tokenRequests"))...)
	for _, m := range s.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(path.Child("volumeLifecycleModes"), m,
				[]string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}))
		}
	}
	if s.SELinuxMount == nil {
		errs = append(errs, field.Required(path.Child("seLinuxMount"), ""))
	}
	if p := s.NodeAllocatableUpdatePeriodSeconds; p != nil && *p < 10 {
		errs = append(errs, field.Invalid(path.Child("nodeAllocatableUpdatePeriodSeconds"), *p, "must be greater than or equal to 10 seconds"))
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(path.Child("serviceAccountTokenInSecrets"), s.ServiceAccountTokenInSecrets,
			"serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	if s.PreventPodSchedulingIfMissing == nil {
		errs = append(errs, field.Required(path.Child("preventPodSchedulingIfMissing"), ""))
	}
	return errs
}

// validateTokenRequests: each audience once, each expiry between ten
// minutes and 2^32 seconds.
func validateTokenRequests(reqs []storagev1.TokenRequest, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, r := range reqs {
		p := path.Index(i)
		if seen[r.Audience] {
			errs = append(errs, field.Duplicate(p.Child("audience"), r.Audience))
			continue
		}
		seen[r.Audience] = true
		if r.ExpirationSeconds == nil {
			continue
		}
		if *r.ExpirationSeconds < int64((10 * time.Minute).Seconds()) {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
		if *r.ExpirationSeconds > 1<<32 {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	return errs
}

// validateCSIDriverUpdate: attachRequired and the lifecycle modes never
// change (kube names the first "attachedRequired").
func validateCSIDriverUpdate(obj, old runtime.Object) field.ErrorList {
	s, o := &obj.(*storagev1.CSIDriver).Spec, &old.(*storagev1.CSIDriver).Spec
	errs := apivalidation.ValidateImmutableField(s.AttachRequired, o.AttachRequired, field.NewPath("spec", "attachedRequired"))
	return append(errs, apivalidation.ValidateImmutableField(s.VolumeLifecycleModes, o.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
}

// csiDriverWarnings advises serviceAccountTokenInSecrets where token
// requests are new or changed.
func csiDriverWarnings(obj, old runtime.Object) []string {
	s := &obj.(*storagev1.CSIDriver).Spec
	if len(s.TokenRequests) == 0 || s.ServiceAccountTokenInSecrets != nil {
		return nil
	}
	if o, ok := old.(*storagev1.CSIDriver); ok && apiequality.Semantic.DeepEqual(o.Spec.TokenRequests, s.TokenRequests) {
		return nil
	}
	return []string{tokenInSecretsWarning}
}

// prepareCSIDriver: a driver's generation counts the changes of its spec
// from none on create.
func prepareCSIDriver(obj, old runtime.Object) {
	d, ok := old.(*storagev1.CSIDriver)
	if n := obj.(*storagev1.CSIDriver); ok && !apiequality.Semantic.DeepEqual(n.Spec, d.Spec) {
		n.Generation = d.Generation + 1
	}
}

var csiDriverTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "AttachRequired", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"]},
		{Name: "PodInfoOnMount", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"]},
		{Name: "StorageCapacity", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"]},
		{Name: "TokenRequests", Type: "string", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"]},
		{Name: "RequiresRepublish", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"]},
		{Name: "Modes", Type: "string", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		d := obj.(*storagev1.CSIDriver)
		boolOr := func(p *bool, v bool) bool {
			if p != nil {
				return *p
			}
			return v
		}
		modes := make([]string, len(d.Spec.VolumeLifecycleModes))
		for i, m := range d.Spec.VolumeLifecycleModes {
			modes[i] = string(m)
		}
		modeList := strings.Join(modes, ",")
		if modeList == "" {
			modeList = "<none>"
		}
		tokens := "<unset>"
		if d.Spec.TokenRequests != nil {
			audiences := make([]string, len(d.Spec.TokenRequests))
			for i, t := range d.Spec.TokenRequests {
				audiences[i] = t.Audience
			}
			tokens = strings.Join(audiences, ",")
		}
		return []any{d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false), boolOr(d.Spec.StorageCapacity, false),
			tokens, boolOr(d.Spec.RequiresRepublish, false), modeList, apiserver.Age(d.CreationTimestamp, now)}
	},
}

// csiNodeIDMaxLength bounds a driver's node ID.
const csiNodeIDMaxLength = 256

func validateCSINode(obj, _ runtime.Object) field.ErrorList {
	path := field.NewPath("spec", "drivers")
	var errs field.ErrorList
	names := map[string]bool{}
	for i, d := range obj.(*storagev1.CSINode).Spec.Drivers {
		p := path.Index(i)
		errs = append(errs, validateCSIDriverName(d.Name, p.Child("name"))...)
		if d.NodeID == "" {
			errs = append(errs, field.Required(p.Child("nodeID"), d.NodeID))
		}
		if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(p.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if a := d.Allocatable; a != nil && a.Count != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*a.Count), p.Child("allocatable", "count"))...)
		}
		if names[d.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), d.Name))
		}
		names[d.Name] = true
		keys := map[string]bool{}
		for _, k := range d.TopologyKeys {
			if k == "" {
				errs = append(errs, field.Required(p, k))
			}
			if keys[k] {
				errs = append(errs, field.Duplicate(p, k))
			}
			keys[k] = true
			for _, msg := range validation.IsQualifiedName(k) {
				errs = append(errs, field.Invalid(p, k, msg))
			}
		}
	}
	return errs
}

// validateCSINodeUpdate: a driver listed before and after is the same but
// for its allocatable count.
func validateCSINodeUpdate(obj, old runtime.Object) field.ErrorList {
	var errs field.ErrorList
	for _, o := range old.(*storagev1.CSINode).Spec.Drivers {
		for _, n := range obj.(*storagev1.CSINode).Spec.Drivers {
			if o.Name != n.Name {
				continue
			}
			if !apiequality.Semantic.DeepEqual(internalDriver(n), internalDriver(o)) {
				errs = append(errs, field.Invalid(field.NewPath("spec").Child("drivers"), internalDriver(n), "field is immutable"))
			}
		}
	}
	return errs
}

// csiNodeDriver is a node's driver as kube's internal type spells it,
// without its allocatable count, which is how kube's refusal of a changed
// driver shows it.
type csiNodeDriver struct {
	Name         string
	NodeID       string
	TopologyKeys []string
	Allocatable  *struct{ Count *int32 }
}

func internalDriver(d storagev1.CSINodeDriver) csiNodeDriver {
	return csiNodeDriver{Name: d.Name, NodeID: d.NodeID, TopologyKeys: d.TopologyKeys}
}

// validateCSINodeStatus checks the storage health a status update writes:
// each driver once, with known conditions.
func validateCSINodeStatus(obj, _ runtime.Object) field.ErrorList {
	path := field.NewPath("status", "storageHealth")
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, h := range obj.(*storagev1.CSINode).Status.StorageHealth {
		p := path.Index(i)
		if seen[h.Name] {
			errs = append(errs, field.Duplicate(p, h.Name))
		}
		seen[h.Name] = true
		errs = append(errs, validateStorageHealth(h, p)...)
	}
	return errs
}

func validateStorageHealth(h storagev1.StorageHealth, path *field.Path) field.ErrorList {
	errs := validateCSIDriverName(h.Name, path.Child("name"))
	if len(h.HealthConditions) > 16 {
		return append(errs, field.TooMany(path.Child("healthConditions"), len(h.HealthConditions), 16))
	}
	for i, c := range h.HealthConditions {
		p := path.Child("healthConditions").Index(i)
		if c.Status != storagev1.StorageUnreachable && c.Status != storagev1.StorageDegraded {
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []storagev1.StorageHealthStatusType{storagev1.StorageDegraded, storagev1.StorageUnreachable}))
		}
		if c.Reason == "" {
			errs = append(errs, field.Required(p.Child("reason"), ""))
		} else {
			for _, msg := range metav1validation.IsValidConditionReason(c.Reason) {
				errs = append(errs, field.Invalid(p.Child("reason"), c.Reason, msg))
			}
			if len(c.Reason) > 256 {
				errs = append(errs, field.TooLong(p.Child("reason"), c.Reason, 256))
			}
		}
		if len(c.Message) > 1024 {
			errs = append(errs, field.TooLong(p.Child("message"), c.Message, 1024))
		}
		if m := c.AccessMode; m != nil && *m != corev1.ReadWriteOnce && *m != corev1.ReadOnlyMany && *m != corev1.ReadWriteMany && *m != corev1.ReadWriteOncePod {
			errs = append(errs, field.NotSupported(p.Child("accessMode"), *m, []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod}))
		}
		if m := c.VolumeMode; m != nil && *m != corev1.PersistentVolumeFilesystem && *m != corev1.PersistentVolumeBlock {
			errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, []corev1.PersistentVolumeMode{corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock}))
		}
	}
	return errs
}

// resetCSINodeStatus: a new node has no status and an update of the
// object keeps the stored one. kube's CSIVolumeHealth gate is off, so the
// status subresource cannot add storage health either.
func resetCSINodeStatus(obj, old runtime.Object) {
	n := obj.(*storagev1.CSINode)
	n.Status = storagev1.CSINodeStatus{}
	if old != nil {
		n.Status = old.(*storagev1.CSINode).Status
	}
}

// prepareCSINodeStatus drops the storage health a status update adds to a
// node that had none (kube's CSIVolumeHealth gate is off).
func prepareCSINodeStatus(sub string, obj, old runtime.Object, _ time.Time) {
	if o, ok := old.(*storagev1.CSINode); sub == "status" && ok && len(o.Status.StorageHealth) == 0 {
		obj.(*storagev1.CSINode).Status.StorageHealth = nil
	}
}

var csiNodeTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		n := obj.(*storagev1.CSINode)
		return []any{n.Name, int64(len(n.Spec.Drivers)), apiserver.Age(n.CreationTimestamp, now)}
	},
}

func validateCSIStorageCapacity(obj, old runtime.Object) field.ErrorList {
	c := obj.(*storagev1.CSIStorageCapacity)
	opts := metav1validation.LabelSelectorValidationOptions{}
	if o, ok := old.(*storagev1.CSIStorageCapacity); ok {
		opts.AllowInvalidLabelValueInSelector = len(metav1validation.ValidateLabelSelector(o.NodeTopology, opts, nil)) > 0
	}
	errs := metav1validation.ValidateLabelSelector(c.NodeTopology, opts, field.NewPath("nodeTopology"))
	for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), "must be greater than or equal to 0"))
	}
	return errs
}

// validateCSIStorageCapacityUpdate: the topology and the class never
// change.
func validateCSIStorageCapacityUpdate(obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity)
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(c.NodeTopology, o.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
	}
	if c.StorageClassName != o.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
	}
	return errs
}

// maxAttachmentMetadataSize and maxVolumeErrorMessage bound what an
// attacher writes in a VolumeAttachment's status.
const (
	maxAttachmentMetadataSize = 256 * 1024
	maxVolumeErrorMessage     = 1024
)

// validateVolumeAttachment: one source, a node, a status within bounds,
// and, checked declaratively after those on create, an attacher.
func validateVolumeAttachment(obj, old runtime.Object) field.ErrorList {
	va := obj.(*storagev1.VolumeAttachment)
	spec := field.NewPath("spec")
	var errs field.ErrorList
	src := &va.Spec.Source
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(spec.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(spec.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil && *src.PersistentVolumeName == "":
		errs = append(errs, field.Required(spec.Child("source", "persistentVolumeName"), "must specify non empty persistentVolumeName"))
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(spec.Child("nodeName"), va.Spec.NodeName, msg))
	}
	status := field.NewPath("status")
	size := 0
	for k, v := range va.Status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachmentMetadataSize {
		errs = append(errs, field.TooLong(status.Child("attachmentMetadata"), "", maxAttachmentMetadataSize))
	}
	errs = append(errs, validateVolumeError(va.Status.AttachError, status.Child("attachError"))...)
	errs = append(errs, validateVolumeError(va.Status.DetachError, status.Child("detachError"))...)
	if src.PersistentVolumeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*src.PersistentVolumeName, false) {
			errs = append(errs, field.Invalid(field.NewPath("spec.source.persistentVolumeName"), *src.PersistentVolumeName, msg))
		}
	}
	if old == nil {
		errs = append(errs, validateAttacher(va.Spec.Attacher, spec.Child("attacher"))...)
	}
	return errs
}

// validateAttacher is kube's declarative check of an attacher: there, a
// DNS subdomain once lowercased, of at most 63 characters.
func validateAttacher(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	//lint:ignore SA1019 kube's declarative check of an attacher is caseless, and its message is this one's
	for _, msg := range content.IsDNS1123SubdomainCaseless(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(name) > 63 {
		errs = append(errs, field.TooLong(path, "", 63))
	}
	return errs
}

func validateVolumeError(e *storagev1.VolumeError, path *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if len(e.Message) > maxVolumeErrorMessage {
		errs = append(errs, field.TooLong(path.Child("message"), "", maxVolumeErrorMessage))
	}
	if e.ErrorCode != nil && *e.ErrorCode < 0 {
		errs = append(errs, field.Invalid(path.Child("errorCode"), *e.ErrorCode, validation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return errs
}

// validateVolumeAttachmentUpdate: the spec never changes.
func validateVolumeAttachmentUpdate(obj, old runtime.Object) field.ErrorList {
	if !apiequality.Semantic.DeepEqual(obj.(*storagev1.VolumeAttachment).Spec, old.(*storagev1.VolumeAttachment).Spec) {
		return field.ErrorList{immutable(field.NewPath("spec"))}
	}
	return nil
}

func resetVolumeAttachmentStatus(obj, old runtime.Object) {
	va := obj.(*storagev1.VolumeAttachment)
	va.Status = storagev1.VolumeAttachmentStatus{}
	if old != nil {
		va.Status = old.(*storagev1.VolumeAttachment).Status
	}
}

var volumeAttachmentTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
		{Name: "Node", Type: "string", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		va := obj.(*storagev1.VolumeAttachment)
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return []any{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, apiserver.Age(va.CreationTimestamp, now)}
	},
}
