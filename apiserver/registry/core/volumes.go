package core

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// volumeResources are PersistentVolumes and their claims (D.17), each with
// its status subresource, which a volume controller writes.
func volumeResources() []*apiserver.Resource {
	status := func() map[string]apiserver.Subresource {
		return map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()}
	}
	return []*apiserver.Resource{
		{GVR: corev1.SchemeGroupVersion.WithResource("persistentvolumes"), Kind: "PersistentVolume", Singular: "persistentvolume",
			ShortNames: []string{"pv"}, Subresources: status(), ReturnDeleted: true, ValidateName: apivalidation.NameIsDNSSubdomain,
			Defaults: defaultVolume, Prepare: prepareVolume, PrepareSubresource: prepareVolumeStatus,
			Validate: validateVolume, ValidateUpdate: validateVolumeUpdate, ValidateStatus: validateNothing,
			Warnings: volumeWarnings, ResetStatus: resetVolumeStatus, Table: volumeTable},
		{GVR: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Kind: "PersistentVolumeClaim", Singular: "persistentvolumeclaim",
			Namespaced: true, ShortNames: []string{"pvc"}, Subresources: status(), ReturnDeleted: true, ValidateName: apivalidation.NameIsDNSSubdomain,
			Defaults: defaultClaim, Prepare: prepareClaim, PrepareSubresource: prepareClaimStatus, Validate: validateClaim, ValidateUpdate: validateClaimUpdate, ValidateStatus: validateClaimStatus,
			Warnings: claimWarnings, ResetStatus: resetClaimStatus, Table: claimTable},
	}
}

// BetaStorageClassAnnotation is the annotation that named a volume's or a
// claim's class before spec.storageClassName, and still wins over it.
const BetaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

func validateNothing(_, _ runtime.Object) field.ErrorList { return nil }

// defaultVolume: Pending, Retain and Filesystem unless set, and a hostPath
// of no particular type (D.17).
func defaultVolume(obj runtime.Object) {
	pv := obj.(*corev1.PersistentVolume)
	if h := pv.Spec.HostPath; h != nil && h.Type == nil {
		t := corev1.HostPathUnset
		h.Type = &t
	}
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		m := corev1.PersistentVolumeFilesystem
		pv.Spec.VolumeMode = &m
	}
}

// prepareVolume: a new volume is Pending since its creation.
func prepareVolume(obj, old runtime.Object) {
	if old != nil {
		return
	}
	pv := obj.(*corev1.PersistentVolume)
	created := pv.CreationTimestamp
	pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &created}
}

// prepareVolumeStatus: a status update that changes the phase without
// moving lastPhaseTransitionTime moves it to now; one that keeps the
// phase and drops the time keeps the stored one.
func prepareVolumeStatus(_ string, obj, old runtime.Object, now time.Time) {
	pv, o := &obj.(*corev1.PersistentVolume).Status, &old.(*corev1.PersistentVolume).Status
	switch t := pv.LastPhaseTransitionTime; {
	case pv.Phase == o.Phase && t == nil:
		pv.LastPhaseTransitionTime = o.LastPhaseTransitionTime
	case pv.Phase != o.Phase && (t == nil || t.Equal(o.LastPhaseTransitionTime)):
		ts := metav1.NewTime(now.Truncate(time.Second))
		pv.LastPhaseTransitionTime = &ts
	}
}

func resetVolumeStatus(obj, old runtime.Object) {
	pv := obj.(*corev1.PersistentVolume)
	pv.Status = corev1.PersistentVolumeStatus{}
	if old != nil {
		pv.Status = old.(*corev1.PersistentVolume).Status
	}
}

var (
	accessModes = []string{string(corev1.ReadOnlyMany), string(corev1.ReadWriteMany), string(corev1.ReadWriteOnce), string(corev1.ReadWriteOncePod)}
	volumeModes = []string{string(corev1.PersistentVolumeBlock), string(corev1.PersistentVolumeFilesystem)}
	// volumeReclaimPolicies are the policies a volume may have; a class
	// has no Recycle.
	volumeReclaimPolicies = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRecycle), string(corev1.PersistentVolumeReclaimRetain)}
)

// validateAccessModes: known modes, and ReadWriteOncePod alone.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	once, other := false, false
	for _, m := range modes {
		switch m {
		case corev1.ReadWriteOncePod:
			once = true
		case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany:
			other = true
		default:
			errs = append(errs, field.NotSupported(path, m, accessModes))
		}
	}
	if once && other {
		errs = append(errs, field.Forbidden(path, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateVolumeMode(m *corev1.PersistentVolumeMode, path *field.Path) field.ErrorList {
	if m != nil && *m != corev1.PersistentVolumeBlock && *m != corev1.PersistentVolumeFilesystem {
		return field.ErrorList{field.NotSupported(path, *m, volumeModes)}
	}
	return nil
}

// validateClassName checks a non-empty class name.
func validateClassName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func validateVolume(obj, _ runtime.Object) field.ErrorList {
	pv := obj.(*corev1.PersistentVolume)
	path := field.NewPath("spec")
	s := &pv.Spec
	var errs field.ErrorList
	if len(s.AccessModes) == 0 {
		errs = append(errs, field.Required(path.Child("accessModes"), ""))
	}
	errs = append(errs, validateAccessModes(s.AccessModes, path.Child("accessModes"))...)
	if len(s.Capacity) == 0 {
		errs = append(errs, field.Required(path.Child("capacity"), ""))
	}
	if _, ok := s.Capacity[corev1.ResourceStorage]; !ok || len(s.Capacity) > 1 {
		errs = append(errs, field.NotSupported(path.Child("capacity"), s.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for r, q := range s.Capacity {
		p := path.Child("capacity").Key(string(r))
		if q.Value() < 0 {
			errs = append(errs, field.Invalid(p, q.Value(), "must be a valid resource quantity"))
		}
		errs = append(errs, positiveQuantity(q, p)...)
	}
	if p := s.PersistentVolumeReclaimPolicy; p != "" && p != corev1.PersistentVolumeReclaimDelete && p != corev1.PersistentVolumeReclaimRecycle &&
		p != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(path.Child("persistentVolumeReclaimPolicy"), p, volumeReclaimPolicies))
	}
	affinity := false
	if s.NodeAffinity != nil {
		affinity = true
		if s.NodeAffinity.Required == nil {
			errs = append(errs, field.Required(path.Child("nodeAffinity", "required"), "must specify required node constraints"))
		} else {
			errs = append(errs, validateNodeSelector(s.NodeAffinity.Required, path.Child("nodeAffinity", "required"))...)
		}
	}
	errs = append(errs, validateVolumeSource(&s.PersistentVolumeSource, affinity, path)...)
	if s.StorageClassName != "" {
		errs = append(errs, validateClassName(s.StorageClassName, path.Child("storageClassName"))...)
	}
	errs = append(errs, validateVolumeMode(s.VolumeMode, path.Child("volumeMode"))...)
	if c := s.VolumeAttributesClassName; c != nil {
		if *c == "" {
			errs = append(errs, field.Required(path.Child("volumeAttributesClassName"), "an empty string is disallowed"))
		} else {
			errs = append(errs, validateClassName(*c, path.Child("volumeAttributesClassName"))...)
		}
		if s.CSI == nil {
			errs = append(errs, field.Required(path.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return append(errs, mountOptionAnnotation(pv)...)
}

// mountOptionsAnnotation is the annotation that gave a volume its mount
// options before spec.mountOptions.
const mountOptionsAnnotation = "volume.beta.kubernetes.io/mount-options"

// mountOptionAnnotation refuses the mount options annotation on the
// volume types that take no mount options (hostPath, local, CSI, ...).
func mountOptionAnnotation(pv *corev1.PersistentVolume) field.ErrorList {
	s := &pv.Spec
	if s.GCEPersistentDisk != nil || s.AWSElasticBlockStore != nil || s.Glusterfs != nil || s.NFS != nil || s.RBD != nil || s.Quobyte != nil ||
		s.ISCSI != nil || s.Cinder != nil || s.CephFS != nil || s.AzureFile != nil || s.VsphereVolume != nil || s.AzureDisk != nil || s.PhotonPersistentDisk != nil {
		return nil
	}
	if _, ok := pv.Annotations[mountOptionsAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations", mountOptionsAnnotation), "may not specify mount options for this volume type")}
	}
	return nil
}

// validateVolumeUpdate: the volume source and the mode never change (a
// CSI volume may gain a controllerExpandSecretRef), nor a class of
// attributes go back to none.
func validateVolumeUpdate(obj, old runtime.Object) field.ErrorList {
	pv, o := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
	src := pv.Spec.PersistentVolumeSource
	if o.Spec.CSI != nil && o.Spec.CSI.ControllerExpandSecretRef == nil && src.CSI != nil && src.CSI.ControllerExpandSecretRef != nil {
		src = *src.DeepCopy()
		src.CSI.ControllerExpandSecretRef = nil
	}
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(src, o.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"),
			fmt.Sprintf("spec.persistentvolumesource is immutable after creation\n%v", diff.Diff(o.Spec.PersistentVolumeSource, src))))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(pv.Spec.VolumeMode, o.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if o.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return errs
}

// deprecatedVolumeTypes are the volume types kube warns about, with its
// words.
var deprecatedVolumeTypes = []struct {
	name string
	set  func(*corev1.PersistentVolumeSpec) bool
	text string
}{
	{"cephfs", func(s *corev1.PersistentVolumeSpec) bool { return s.CephFS != nil }, "deprecated in v1.28, non-functional in v1.31+"},
	{"photonPersistentDisk", func(s *corev1.PersistentVolumeSpec) bool { return s.PhotonPersistentDisk != nil }, "deprecated in v1.11, non-functional in v1.16+"},
	{"scaleIO", func(s *corev1.PersistentVolumeSpec) bool { return s.ScaleIO != nil }, "deprecated in v1.16, non-functional in v1.22+"},
	{"storageOS", func(s *corev1.PersistentVolumeSpec) bool { return s.StorageOS != nil }, "deprecated in v1.22, non-functional in v1.25+"},
	{"glusterfs", func(s *corev1.PersistentVolumeSpec) bool { return s.Glusterfs != nil }, "deprecated in v1.25, non-functional in v1.26+"},
	{"rbd", func(s *corev1.PersistentVolumeSpec) bool { return s.RBD != nil }, "deprecated in v1.28, non-functional in v1.31+"},
}

// volumeWarnings are kube's about deprecated annotations, the Recycle
// policy and deprecated volume types.
func volumeWarnings(obj, _ runtime.Object) []string {
	pv := obj.(*corev1.PersistentVolume)
	var ws []string
	for _, a := range []struct{ key, text string }{
		{BetaStorageClassAnnotation, `deprecated since v1.8; use "storageClassName" attribute instead`},
		{mountOptionsAnnotation, `deprecated since v1.31; use "mountOptions" attribute instead`},
	} {
		if _, ok := pv.Annotations[a.key]; ok {
			ws = append(ws, fmt.Sprintf("%s: %s", field.NewPath("metadata", "annotations").Key(a.key), a.text))
		}
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		ws = append(ws, "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.")
	}
	for _, d := range deprecatedVolumeTypes {
		if d.set(&pv.Spec) {
			ws = append(ws, fmt.Sprintf("spec.%s: %s", d.name, d.text))
		}
	}
	return ws
}

// accessModesString is kubectl's short form of access modes (RWO,ROX,...).
func accessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	s := ""
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		for _, have := range modes {
			if have == m.mode {
				if s != "" {
					s += ","
				}
				s += m.short
				break
			}
		}
	}
	return s
}

// volumeClass is a volume's class: the beta annotation's, else the spec's.
func volumeClass(pv *corev1.PersistentVolume) string {
	if c, ok := pv.Annotations[BetaStorageClassAnnotation]; ok {
		return c
	}
	return pv.Spec.StorageClassName
}

// ClaimClass is a claim's class: the beta annotation's, else the spec's,
// else "".
func ClaimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[BetaStorageClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

var volumeTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]},
		{Name: "Reclaim Policy", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]},
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]},
		{Name: "Claim", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pv"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pv"},
		{Name: "Reason", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]},
		apiserver.AgeColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		pv := obj.(*corev1.PersistentVolume)
		claim := ""
		if r := pv.Spec.ClaimRef; r != nil {
			claim = r.Namespace + "/" + r.Name
		}
		capacity := pv.Spec.Capacity[corev1.ResourceStorage]
		phase := string(pv.Status.Phase)
		if pv.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		return []any{pv.Name, capacity.String(), accessModesString(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
			phase, claim, volumeClass(pv), orUnset(pv.Spec.VolumeAttributesClassName), pv.Status.Reason,
			apiserver.Age(pv.CreationTimestamp, now), modeOrUnset(pv.Spec.VolumeMode)}
	},
}

func orUnset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

func modeOrUnset(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

// positiveQuantity is kube's check of a quantity above zero.
func positiveQuantity(q apiresource.Quantity, path *field.Path) field.ErrorList {
	if q.Cmp(apiresource.Quantity{}) <= 0 {
		return field.ErrorList{field.Invalid(path, q.String(), "must be greater than zero")}
	}
	return nil
}

// validateNodeSelector checks a volume's required node affinity as kube
// checks a node selector.
func validateNodeSelector(sel *corev1.NodeSelector, path *field.Path) field.ErrorList {
	terms := path.Child("nodeSelectorTerms")
	if len(sel.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(terms, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, t := range sel.NodeSelectorTerms {
		for j, r := range t.MatchExpressions {
			errs = append(errs, validateNodeSelectorRequirement(r, terms.Index(i).Child("matchExpressions").Index(j))...)
		}
		for j, r := range t.MatchFields {
			errs = append(errs, validateNodeFieldRequirement(r, terms.Index(i).Child("matchFields").Index(j))...)
		}
	}
	return errs
}

func validateNodeSelectorRequirement(r corev1.NodeSelectorRequirement, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(path.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			errs = append(errs, field.Forbidden(path.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(path.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(path.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	errs = append(errs, metav1validation.ValidateLabelName(r.Key, path.Child("key"))...)
	for i, v := range r.Values {
		errs = append(errs, metav1validation.ValidateLabels(map[string]string{"k": v}, path.Child("values").Index(i))...)
	}
	return errs
}

func validateNodeFieldRequirement(r corev1.NodeSelectorRequirement, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(path.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		errs = append(errs, field.Invalid(path.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	if r.Key != "metadata.name" {
		return append(errs, field.Invalid(path.Child("key"), r.Key, "not a valid field selector key"))
	}
	for i, v := range r.Values {
		for _, msg := range apivalidation.NameIsDNSSubdomain(v, false) {
			errs = append(errs, field.Invalid(path.Child("values").Index(i), v, msg))
		}
	}
	return errs
}
