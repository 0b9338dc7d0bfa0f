package core

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// defaultClaim: Pending and Filesystem unless set (D.17).
func defaultClaim(obj runtime.Object) {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	if pvc.Spec.VolumeMode == nil {
		m := corev1.PersistentVolumeFilesystem
		pvc.Spec.VolumeMode = &m
	}
}

// prepareClaim drops what kube drops from a claim's data sources (a
// source in another namespace, its CrossNamespaceVolumeDataSource gate
// being off; a new dataSource that is neither a claim nor a snapshot), and
// makes dataSource and dataSourceRef name the same object where only one
// is given.
func prepareClaim(obj, old runtime.Object) {
	s := &obj.(*corev1.PersistentVolumeClaim).Spec
	var was *corev1.PersistentVolumeClaimSpec
	if o, ok := old.(*corev1.PersistentVolumeClaim); ok {
		was = &o.Spec
	}
	if r := s.DataSourceRef; r != nil && r.Namespace != nil && *r.Namespace != "" && (was == nil || was.DataSourceRef == nil) {
		s.DataSourceRef = nil
	}
	if (was == nil || was.DataSource == nil && was.DataSourceRef == nil) && s.DataSourceRef == nil && !claimOrSnapshot(s.DataSource) {
		s.DataSource = nil
	}
	switch d, r := s.DataSource, s.DataSourceRef; {
	case d != nil && r == nil:
		s.DataSourceRef = &corev1.TypedObjectReference{Kind: d.Kind, Name: d.Name, APIGroup: copyString(d.APIGroup)}
	case r != nil && d == nil && (r.Namespace == nil || *r.Namespace == ""):
		s.DataSource = &corev1.TypedLocalObjectReference{Kind: r.Kind, Name: r.Name, APIGroup: copyString(r.APIGroup)}
	}
}

// claimOrSnapshot: the data source kube kept before any object could be
// one, a claim or a VolumeSnapshot.
func claimOrSnapshot(d *corev1.TypedLocalObjectReference) bool {
	if d == nil {
		return false
	}
	group := ""
	if d.APIGroup != nil {
		group = *d.APIGroup
	}
	return d.Kind == "PersistentVolumeClaim" && group == "" || d.Kind == "VolumeSnapshot" && group == "snapshot.storage.k8s.io"
}

func copyString(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// prepareClaimStatus drops the health status a status update adds to a
// claim that had none (kube's CSIVolumeHealth gate is off).
func prepareClaimStatus(_ string, obj, old runtime.Object, _ time.Time) {
	if o := old.(*corev1.PersistentVolumeClaim); o.Status.HealthStatus == nil {
		obj.(*corev1.PersistentVolumeClaim).Status.HealthStatus = nil
	}
}

func resetClaimStatus(obj, old runtime.Object) {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	pvc.Status = corev1.PersistentVolumeClaimStatus{}
	if old != nil {
		pvc.Status = old.(*corev1.PersistentVolumeClaim).Status
	}
}

// validateClaim checks a claim's spec (D.17): access modes, a positive
// storage request, its selector, class, mode and data sources. An update
// may keep label values and API groups an older server let in.
func validateClaim(obj, old runtime.Object) field.ErrorList {
	s := &obj.(*corev1.PersistentVolumeClaim).Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	if len(s.AccessModes) == 0 {
		errs = append(errs, field.Required(path.Child("accessModes"), "at least 1 access mode is required"))
	}
	o, _ := old.(*corev1.PersistentVolumeClaim)
	if s.Selector != nil {
		opts := metav1validation.LabelSelectorValidationOptions{}
		if o != nil {
			opts.AllowInvalidLabelValueInSelector = len(metav1validation.ValidateLabelSelector(o.Spec.Selector, opts, nil)) > 0
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, opts, path.Child("selector"))...)
	}
	errs = append(errs, validateAccessModes(s.AccessModes, path.Child("accessModes"))...)
	storagePath := path.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if e := positiveQuantity(q, storagePath); len(e) > 0 {
		errs = append(errs, e...)
	} else if q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(storagePath, q, "must be an integer"))
	}
	if c := s.StorageClassName; c != nil && *c != "" {
		errs = append(errs, validateClassName(*c, path.Child("storageClassName"))...)
	}
	errs = append(errs, validateVolumeMode(s.VolumeMode, path.Child("volumeMode"))...)
	errs = append(errs, validateClaimDataSources(s, o, path)...)
	if c := s.VolumeAttributesClassName; c != nil && *c != "" {
		errs = append(errs, validateClassName(*c, path.Child("volumeAttributesClassName"))...)
	}
	return errs
}

// validateClaimDataSources checks dataSource and dataSourceRef, and that
// they name the same object unless the ref names another namespace.
func validateClaimDataSources(s *corev1.PersistentVolumeClaimSpec, o *corev1.PersistentVolumeClaim, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	anyGroup := o != nil && (o.Spec.DataSource != nil && o.Spec.DataSource.APIGroup != nil || o.Spec.DataSourceRef != nil && o.Spec.DataSourceRef.APIGroup != nil)
	if d := s.DataSource; d != nil {
		errs = append(errs, validateDataSource(d.Name, d.Kind, d.APIGroup, anyGroup, path.Child("dataSource"))...)
	}
	if d := s.DataSourceRef; d != nil {
		errs = append(errs, validateDataSource(d.Name, d.Kind, d.APIGroup, anyGroup, path.Child("dataSourceRef"))...)
		if d.Namespace != nil && *d.Namespace != "" {
			for _, msg := range apivalidation.ValidateNamespaceName(*d.Namespace, false) {
				errs = append(errs, field.Invalid(path.Child("dataSourceRef", "namespace"), *d.Namespace, msg))
			}
		}
	}
	if r := s.DataSourceRef; r != nil && r.Namespace != nil && *r.Namespace != "" {
		if s.DataSource != nil {
			errs = append(errs, field.Invalid(path, path.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if d := s.DataSource; d != nil && r != nil && !(apiequality.Semantic.DeepEqual(d.APIGroup, r.APIGroup) && d.Kind == r.Kind && d.Name == r.Name) {
		errs = append(errs, field.Invalid(path, path.Child("dataSource"), "must match dataSourceRef"))
	}
	return errs
}

// validateDataSource checks a claim's data source: a name and a kind, a
// PersistentVolumeClaim unless an API group is named, and a valid group.
func validateDataSource(name, kind string, group *string, anyGroup bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	if kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), ""))
	}
	g := ""
	if group != nil {
		g = *group
	}
	if g == "" && kind != "PersistentVolumeClaim" {
		errs = append(errs, field.Invalid(path, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if g != "" && !anyGroup {
		for _, msg := range validation.IsDNS1123Subdomain(g) {
			errs = append(errs, field.Invalid(path.Child("apiGroup"), g, msg))
		}
	}
	return errs
}

// validateClaimUpdate: a claim's spec is fixed once created, but for a
// bound claim's storage request and attributes class, a volume name set
// once, and a class set where none was (D.17). The request may shrink
// only above the capacity the claim has.
func validateClaimUpdate(obj, old runtime.Object) field.ErrorList {
	pvc, o := obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim)
	n, was := pvc.DeepCopy(), o.DeepCopy()
	var errs field.ErrorList
	if o.Spec.VolumeName == "" {
		was.Spec.VolumeName = n.Spec.VolumeName
	}
	oldBeta, oldHasBeta := o.Annotations[BetaStorageClassAnnotation]
	newBeta, newHasBeta := pvc.Annotations[BetaStorageClassAnnotation]
	switch {
	case oldHasBeta && o.Spec.StorageClassName == nil && pvc.Spec.StorageClassName != nil && *pvc.Spec.StorageClassName == oldBeta &&
		(!newHasBeta || newBeta == oldBeta):
		// The class moves from the beta annotation into the spec.
		n.Spec.StorageClassName = nil
	default:
		if newBeta != oldBeta {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations", BetaStorageClassAnnotation), newBeta, "field is immutable"))
		}
		if pvc.Spec.StorageClassName != nil && o.Spec.StorageClassName == nil && (!oldHasBeta || *pvc.Spec.StorageClassName == oldBeta) {
			n.Spec.StorageClassName = was.Spec.StorageClassName
		}
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		if n.Spec.Resources.Requests != nil {
			n.Spec.Resources.Requests[corev1.ResourceStorage] = o.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		n.Spec.VolumeAttributesClassName = was.Spec.VolumeAttributesClassName
	}
	if !apiequality.Semantic.DeepEqual(n.Spec, was.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"),
			fmt.Sprintf("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n%v", diff.Diff(was.Spec, n.Spec))))
	}
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], o.Spec.Resources.Requests[corev1.ResourceStorage]
	if capacity := o.Status.Capacity[corev1.ResourceStorage]; newSize.Cmp(oldSize) < 0 && newSize.Cmp(capacity) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(pvc.Spec.VolumeMode, o.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if !apiequality.Semantic.DeepEqual(o.Spec.VolumeAttributesClassName, pvc.Spec.VolumeAttributesClassName) && o.Status.CurrentVolumeAttributesClassName != nil {
		if c := pvc.Spec.VolumeAttributesClassName; c == nil {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"))
		} else if *c == "" {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil"))
		}
	}
	return errs
}

// allocatedStatuses are the states of a claim's resize.
var allocatedStatuses = []string{string(corev1.PersistentVolumeClaimControllerResizeInProgress), string(corev1.PersistentVolumeClaimControllerResizeInfeasible),
	string(corev1.PersistentVolumeClaimNodeResizeInProgress), string(corev1.PersistentVolumeClaimNodeResizeInfeasible), string(corev1.PersistentVolumeClaimNodeResizePending)}

// validateClaimStatus checks what a status update writes: the capacity,
// and the resources allocated and their resize states.
func validateClaimStatus(obj, _ runtime.Object) field.ErrorList {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	var errs field.ErrorList
	if len(pvc.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	for r, q := range pvc.Status.Capacity {
		if q.Value() < 0 {
			errs = append(errs, field.Invalid(field.NewPath("status", "capacity").Key(string(r)), q.Value(), "must be a valid resource quantity"))
		}
	}
	statusPath := field.NewPath("status", "allocatedResourceStatuses")
	for k, v := range pvc.Status.AllocatedResourceStatuses {
		errs = append(errs, claimResourceKey(string(k), statusPath)...)
		if !containsString(allocatedStatuses, string(v)) {
			errs = append(errs, field.NotSupported(statusPath, k, allocatedStatuses))
		}
	}
	allocPath := field.NewPath("status", "allocatedResources")
	for r, q := range pvc.Status.AllocatedResources {
		if e := claimResourceKey(string(r), allocPath); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		p := allocPath.Key(string(r))
		switch {
		case q.Value() < 0:
			errs = append(errs, field.Invalid(p, q.Value(), "must be a valid resource quantity"))
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		case q.MilliValue()%1000 != 0:
			errs = append(errs, field.Invalid(p, q, "must be an integer"))
		}
	}
	return errs
}

// claimResourceKey: a qualified name, and storage unless prefixed.
func claimResourceKey(key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(key) {
		errs = append(errs, field.Invalid(path, key, msg))
	}
	if len(errs) == 0 && key != string(corev1.ResourceStorage) && !hasDomainPrefix(key) {
		errs = append(errs, field.NotSupported(path, key, []string{string(corev1.ResourceStorage)}))
	}
	return errs
}

func hasDomainPrefix(key string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// claimWarnings are kube's: the deprecated beta class annotation, and a
// storage request or limit of a fraction of a byte.
func claimWarnings(obj, _ runtime.Object) []string {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	var ws []string
	if _, ok := pvc.Annotations[BetaStorageClassAnnotation]; ok {
		ws = append(ws, fmt.Sprintf("%s: %s", field.NewPath("metadata", "annotations").Key(BetaStorageClassAnnotation),
			`deprecated since v1.8; use "storageClassName" attribute instead`))
	}
	for _, r := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", pvc.Spec.Resources.Requests}, {"limits", pvc.Spec.Resources.Limits}} {
		if q := r.list[corev1.ResourceStorage]; q.MilliValue()%1000 != 0 {
			ws = append(ws, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer",
				field.NewPath("spec", "resources", r.name).Key(string(corev1.ResourceStorage)), q.String()))
		}
	}
	return ws
}

var claimTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]},
		{Name: "Volume", Type: "string", Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]},
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
		apiserver.AgeColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		pvc := obj.(*corev1.PersistentVolumeClaim)
		phase := string(pvc.Status.Phase)
		if pvc.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		capacity, modes := "", ""
		if pvc.Spec.VolumeName != "" {
			modes = accessModesString(pvc.Status.AccessModes)
			q := pvc.Status.Capacity[corev1.ResourceStorage]
			capacity = q.String()
		}
		return []any{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, ClaimClass(pvc),
			orUnset(pvc.Spec.VolumeAttributesClassName), apiserver.Age(pvc.CreationTimestamp, now), modeOrUnset(pvc.Spec.VolumeMode)}
	},
}
