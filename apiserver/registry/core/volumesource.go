package core

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// volumeSources are a volume's sources in the order kube checks them, each
// with its field name. Only one may be set; the first is checked in
// detail where kubegate knows its rules (checkVolumeSource).
var volumeSources = []struct {
	name string
	set  func(*corev1.PersistentVolumeSource) bool
}{
	{"hostPath", func(s *corev1.PersistentVolumeSource) bool { return s.HostPath != nil }},
	{"gcePersistentDisk", func(s *corev1.PersistentVolumeSource) bool { return s.GCEPersistentDisk != nil }},
	{"awsElasticBlockStore", func(s *corev1.PersistentVolumeSource) bool { return s.AWSElasticBlockStore != nil }},
	{"glusterfs", func(s *corev1.PersistentVolumeSource) bool { return s.Glusterfs != nil }},
	{"flocker", func(s *corev1.PersistentVolumeSource) bool { return s.Flocker != nil }},
	{"nfs", func(s *corev1.PersistentVolumeSource) bool { return s.NFS != nil }},
	{"rbd", func(s *corev1.PersistentVolumeSource) bool { return s.RBD != nil }},
	{"quobyte", func(s *corev1.PersistentVolumeSource) bool { return s.Quobyte != nil }},
	{"cephFS", func(s *corev1.PersistentVolumeSource) bool { return s.CephFS != nil }},
	{"iscsi", func(s *corev1.PersistentVolumeSource) bool { return s.ISCSI != nil }},
	{"cinder", func(s *corev1.PersistentVolumeSource) bool { return s.Cinder != nil }},
	{"fc", func(s *corev1.PersistentVolumeSource) bool { return s.FC != nil }},
	{"flexVolume", func(s *corev1.PersistentVolumeSource) bool { return s.FlexVolume != nil }},
	{"azureFile", func(s *corev1.PersistentVolumeSource) bool { return s.AzureFile != nil }},
	{"vsphereVolume", func(s *corev1.PersistentVolumeSource) bool { return s.VsphereVolume != nil }},
	{"photonPersistentDisk", func(s *corev1.PersistentVolumeSource) bool { return s.PhotonPersistentDisk != nil }},
	{"portworxVolume", func(s *corev1.PersistentVolumeSource) bool { return s.PortworxVolume != nil }},
	{"azureDisk", func(s *corev1.PersistentVolumeSource) bool { return s.AzureDisk != nil }},
	{"scaleIO", func(s *corev1.PersistentVolumeSource) bool { return s.ScaleIO != nil }},
	{"local", func(s *corev1.PersistentVolumeSource) bool { return s.Local != nil }},
	{"storageos", func(s *corev1.PersistentVolumeSource) bool { return s.StorageOS != nil }},
	{"csi", func(s *corev1.PersistentVolumeSource) bool { return s.CSI != nil }},
}

// validateVolumeSource checks that a volume has exactly one source, and
// the source: a local volume needs node affinity.
func validateVolumeSource(src *corev1.PersistentVolumeSource, affinity bool, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, vs := range volumeSources {
		if !vs.set(src) {
			continue
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(spec.Child(vs.name), "may not specify more than 1 volume type"))
			continue
		}
		n++
		errs = append(errs, checkVolumeSource(src, vs.name, spec.Child(vs.name))...)
		if vs.name == "local" && !affinity {
			errs = append(errs, field.Required(spec.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(spec, "must specify a volume type"))
	}
	return errs
}

var hostPathTypes = []string{"", string(corev1.HostPathBlockDev), string(corev1.HostPathCharDev), string(corev1.HostPathDirectory),
	string(corev1.HostPathDirectoryOrCreate), string(corev1.HostPathFile), string(corev1.HostPathFileOrCreate), string(corev1.HostPathSocket)}

// checkVolumeSource checks the source named name: hostPath, local, nfs and
// csi as kube does; the others only for being there.
func checkVolumeSource(src *corev1.PersistentVolumeSource, name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch name {
	case "hostPath":
		if src.HostPath.Path == "" {
			return field.ErrorList{field.Required(p.Child("path"), "")}
		}
		errs = append(errs, noBacksteps(src.HostPath.Path, p.Child("path"))...)
		if t := src.HostPath.Type; t != nil && !slices.Contains(hostPathTypes, string(*t)) {
			errs = append(errs, field.NotSupported(p.Child("type"), t, hostPathTypes))
		}
	case "local":
		if src.Local.Path == "" {
			return field.ErrorList{field.Required(p.Child("path"), "")}
		}
		errs = append(errs, noBacksteps(src.Local.Path, p.Child("path"))...)
	case "nfs":
		if src.NFS.Server == "" {
			errs = append(errs, field.Required(p.Child("server"), ""))
		}
		if src.NFS.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
	case "csi":
		errs = append(errs, validateCSIVolume(src.CSI, p)...)
	}
	return errs
}

func validateCSIVolume(csi *corev1.CSIPersistentVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch d := csi.Driver; {
	case d == "":
		errs = append(errs, field.Required(p.Child("driver"), ""))
	default:
		if len(d) > 63 {
			errs = append(errs, field.TooLong(p.Child("driver"), "", 63))
		}
		for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(d)) {
			errs = append(errs, field.Invalid(p.Child("driver"), d, msg))
		}
	}
	if csi.VolumeHandle == "" {
		errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
	}
	for _, ref := range []struct {
		name string
		ref  *corev1.SecretReference
	}{{"controllerPublishSecretRef", csi.ControllerPublishSecretRef}, {"controllerExpandSecretRef", csi.ControllerExpandSecretRef},
		{"nodePublishSecretRef", csi.NodePublishSecretRef}, {"nodeExpandSecretRef", csi.NodeExpandSecretRef}} {
		if ref.ref != nil {
			errs = append(errs, validateSecretReference(ref.ref, p.Child(ref.name))...)
		}
	}
	return errs
}

func validateSecretReference(ref *corev1.SecretReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	if ref.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(ref.Namespace) {
			errs = append(errs, field.Invalid(p.Child("namespace"), ref.Namespace, msg))
		}
	}
	return errs
}

// noBacksteps refuses a path with a ".." element.
func noBacksteps(target string, p *field.Path) field.ErrorList {
	if slices.Contains(strings.Split(filepath.ToSlash(target), "/"), "..") {
		return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
	}
	return nil
}
