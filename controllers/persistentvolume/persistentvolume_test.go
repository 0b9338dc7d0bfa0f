package persistentvolume_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/persistentvolume"
	"github.com/kubegate/kubegate/controllers/volumeprotection"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	s := controllertest.StartWith(t, manager.Options{Logger: slog.New(slog.DiscardHandler), Descriptors: []controllers.Descriptor{
		persistentvolume.Descriptor, persistentvolume.ExpanderDescriptor, volumeprotection.ClaimDescriptor, volumeprotection.VolumeDescriptor}})
	return s.Client
}

func class(t *testing.T, c kubernetes.Interface, name, provisioner string, mode storagev1.VolumeBindingMode, isDefault bool) {
	t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner,
		VolumeBindingMode: &mode, AllowVolumeExpansion: ptr.To(true)}
	if isDefault {
		sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	if _, err := c.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func volume(t *testing.T, c kubernetes.Interface, name, className, size string, policy corev1.PersistentVolumeReclaimPolicy, ref *corev1.ObjectReference) {
	t.Helper()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"size": size}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: className,
			PersistentVolumeReclaimPolicy: policy, ClaimRef: ref,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}},
		}}
	if _, err := c.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func claim(t *testing.T, c kubernetes.Interface, name string, className *string, size, volumeName string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: className, VolumeName: volumeName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
	pvc, err := c.CoreV1().PersistentVolumeClaims("default").Create(context.Background(), pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}

func getClaim(t *testing.T, c kubernetes.Interface, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc
}

func getVolume(t *testing.T, c kubernetes.Interface, name string) *corev1.PersistentVolume {
	t.Helper()
	pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// waitBound waits for claim to be Bound and returns it.
func waitBound(t *testing.T, c kubernetes.Interface, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var pvc *corev1.PersistentVolumeClaim
	testwait.For(t, wait, "claim "+name+" Bound", func() (bool, string) {
		pvc = getClaim(t, c, name)
		return pvc.Status.Phase == corev1.ClaimBound, fmt.Sprintf("%s (volume %q)", pvc.Status.Phase, pvc.Spec.VolumeName)
	})
	return pvc
}

func waitVolumePhase(t *testing.T, c kubernetes.Interface, name string, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	testwait.For(t, wait, "volume "+name+" "+string(phase), func() (bool, string) {
		pv = getVolume(t, c, name)
		return pv.Status.Phase == phase, string(pv.Status.Phase)
	})
	return pv
}

func waitGone(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	testwait.For(t, wait, "volume "+name+" deleted", func() (bool, string) {
		pv, err := c.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("%s, finalizers %v", pv.Status.Phase, pv.Finalizers)
	})
}

// waitEvent waits for an event with reason on the object named name and
// returns its message.
func waitEvent(t *testing.T, c kubernetes.Interface, ns, name, reason string) string {
	t.Helper()
	var msg string
	testwait.For(t, wait, "event "+reason+" on "+name, func() (bool, string) {
		evs, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				msg = e.Message
				return true, ""
			}
			seen = append(seen, e.Reason)
		}
		return false, fmt.Sprintf("events %v", seen)
	})
	return msg
}

func TestClaimBindsSmallestMatchingVolume_G20(t *testing.T) {
	t.Parallel()
	c := start(t)
	volume(t, c, "small", "manual", "1Gi", corev1.PersistentVolumeReclaimRetain, nil)
	volume(t, c, "big", "manual", "10Gi", corev1.PersistentVolumeReclaimRetain, nil)
	volume(t, c, "fit", "manual", "5Gi", corev1.PersistentVolumeReclaimRetain, nil)
	volume(t, c, "other-class", "fast", "4Gi", corev1.PersistentVolumeReclaimRetain, nil)
	// Volumes are created Pending; only Available ones are matched.
	for _, name := range []string{"small", "big", "fit", "other-class"} {
		waitVolumePhase(t, c, name, corev1.VolumeAvailable)
	}
	claim(t, c, "data", ptr.To("manual"), "3Gi", "")
	pvc := waitBound(t, c, "data")
	if pvc.Spec.VolumeName != "fit" {
		t.Fatalf("claim bound to %q, want the smallest that fits, %q", pvc.Spec.VolumeName, "fit")
	}
	if pvc.Annotations["pv.kubernetes.io/bind-completed"] != "yes" || pvc.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
		t.Errorf("claim annotations = %v, want bind-completed and bound-by-controller", pvc.Annotations)
	}
	if got := pvc.Status.Capacity[corev1.ResourceStorage]; got.String() != "5Gi" {
		t.Errorf("claim status.capacity = %s, want the volume's 5Gi", got.String())
	}
	if !slices.Equal(pvc.Status.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim status.accessModes = %v", pvc.Status.AccessModes)
	}
	pv := waitVolumePhase(t, c, "fit", corev1.VolumeBound)
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID || pv.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
		t.Errorf("volume claimRef = %+v, annotations %v", pv.Spec.ClaimRef, pv.Annotations)
	}
	for _, name := range []string{"small", "big", "other-class"} {
		waitVolumePhase(t, c, name, corev1.VolumeAvailable)
	}
	// A claim nothing fits, without a class, stays Pending and says so.
	claim(t, c, "nothing", ptr.To(""), "100Gi", "")
	msg := waitEvent(t, c, "default", "nothing", "FailedBinding")
	if msg != "no persistent volumes available for this claim and no storage class is set" {
		t.Errorf("FailedBinding message = %q", msg)
	}
	if got := getClaim(t, c, "nothing").Status.Phase; got != corev1.ClaimPending {
		t.Errorf("claim nothing is %s, want Pending", got)
	}
}

func TestPreboundClaimAndVolume_G20(t *testing.T) {
	t.Parallel()
	c := start(t)
	// A claim naming its volume gets it, though a smaller one fits.
	volume(t, c, "small", "manual", "1Gi", corev1.PersistentVolumeReclaimRetain, nil)
	volume(t, c, "named", "manual", "8Gi", corev1.PersistentVolumeReclaimRetain, nil)
	waitVolumePhase(t, c, "small", corev1.VolumeAvailable)
	claim(t, c, "names-volume", ptr.To("manual"), "1Gi", "named")
	pvc := waitBound(t, c, "names-volume")
	if pvc.Spec.VolumeName != "named" {
		t.Fatalf("claim bound to %q, want named", pvc.Spec.VolumeName)
	}
	if _, ok := pvc.Annotations["pv.kubernetes.io/bound-by-controller"]; ok {
		t.Errorf("a claim the user bound got bound-by-controller: %v", pvc.Annotations)
	}
	if pv := waitVolumePhase(t, c, "named", corev1.VolumeBound); pv.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
		t.Errorf("volume annotations = %v, want bound-by-controller", pv.Annotations)
	}
	// A volume naming its claim gets it, though the claim fits another.
	volume(t, c, "names-claim", "manual", "9Gi", corev1.PersistentVolumeReclaimRetain,
		&corev1.ObjectReference{Namespace: "default", Name: "wanted"})
	claim(t, c, "wanted", ptr.To("manual"), "1Gi", "")
	pvc = waitBound(t, c, "wanted")
	if pvc.Spec.VolumeName != "names-claim" {
		t.Fatalf("claim bound to %q, want names-claim", pvc.Spec.VolumeName)
	}
	pv := waitVolumePhase(t, c, "names-claim", corev1.VolumeBound)
	if pv.Spec.ClaimRef.UID != pvc.UID {
		t.Errorf("volume claimRef UID = %q, want %q", pv.Spec.ClaimRef.UID, pvc.UID)
	}
	if _, ok := pv.Annotations["pv.kubernetes.io/bound-by-controller"]; ok {
		t.Errorf("a volume the user bound got bound-by-controller: %v", pv.Annotations)
	}
	// A claim naming a volume too small for it waits with VolumeMismatch.
	claim(t, c, "too-big", ptr.To("manual"), "5Gi", "small")
	if msg := waitEvent(t, c, "default", "too-big", "VolumeMismatch"); msg != `Cannot bind to requested volume "small": requested PV is too small` {
		t.Errorf("VolumeMismatch message = %q", msg)
	}
}

func TestReleasedVolumesReclaimed_G20(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	volume(t, c, "kept", "manual", "1Gi", corev1.PersistentVolumeReclaimRetain, &corev1.ObjectReference{Namespace: "default", Name: "a"})
	volume(t, c, "no-deleter", "manual", "1Gi", corev1.PersistentVolumeReclaimDelete, &corev1.ObjectReference{Namespace: "default", Name: "b"})
	claim(t, c, "a", ptr.To("manual"), "1Gi", "")
	claim(t, c, "b", ptr.To("manual"), "1Gi", "")
	waitBound(t, c, "a")
	waitBound(t, c, "b")
	for _, n := range []string{"a", "b"} {
		if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Retain: Released, and kept with its claimRef.
	if pv := waitVolumePhase(t, c, "kept", corev1.VolumeReleased); pv.Spec.ClaimRef == nil {
		t.Error("a retained volume lost its claimRef")
	}
	// Delete, but no provisioner of kubegate's made it: Failed.
	pv := waitVolumePhase(t, c, "no-deleter", corev1.VolumeFailed)
	want := `error getting deleter volume plugin for volume "no-deleter": no deletable volume plugin matched`
	if pv.Status.Message != want {
		t.Errorf("status.message = %q, want %q", pv.Status.Message, want)
	}
	waitEvent(t, c, "", "no-deleter", "VolumeFailedDelete")
}

func TestSimulatedProvisioning_G20(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	class(t, c, "sim", persistentvolume.SimulatedProvisioner, storagev1.VolumeBindingImmediate, false)
	claim(t, c, "data", ptr.To("sim"), "2Gi", "")
	pvc := waitBound(t, c, "data")
	name := "pvc-" + string(pvc.UID)
	if pvc.Spec.VolumeName != name {
		t.Fatalf("claim bound to %q, want %q", pvc.Spec.VolumeName, name)
	}
	for _, k := range []string{"volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner"} {
		if pvc.Annotations[k] != persistentvolume.SimulatedProvisioner {
			t.Errorf("claim annotation %s = %q", k, pvc.Annotations[k])
		}
	}
	pv := waitVolumePhase(t, c, name, corev1.VolumeBound)
	if pv.Annotations["pv.kubernetes.io/provisioned-by"] != persistentvolume.SimulatedProvisioner {
		t.Errorf("volume annotations = %v", pv.Annotations)
	}
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.String() != "2Gi" || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Spec.StorageClassName != "sim" || pv.Spec.HostPath == nil {
		t.Errorf("volume spec = %+v", pv.Spec)
	}
	if !slices.Contains(pv.Finalizers, "kubernetes.io/pv-controller") || !slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") {
		t.Errorf("volume finalizers = %v", pv.Finalizers)
	}
	msg := waitEvent(t, c, "default", "data", "ProvisioningSucceeded")
	if want := "Successfully provisioned volume " + name + " using kubegate.io/simulated"; msg != want {
		t.Errorf("ProvisioningSucceeded message = %q, want %q", msg, want)
	}

	// Expansion: the volume and the claim's capacity grow.
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}`)
	if _, err := c.CoreV1().PersistentVolumeClaims("default").Patch(ctx, "data", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "claim capacity 5Gi", func() (bool, string) {
		pvc = getClaim(t, c, "data")
		got := pvc.Status.Capacity[corev1.ResourceStorage]
		return got.String() == "5Gi", got.String()
	})
	if got := getVolume(t, c, name).Spec.Capacity[corev1.ResourceStorage]; got.String() != "5Gi" {
		t.Errorf("volume capacity = %s, want 5Gi", got.String())
	}
	if len(pvc.Status.Conditions) != 0 || pvc.Status.AllocatedResourceStatuses != nil {
		t.Errorf("claim status after resize = %+v", pvc.Status)
	}
	if got := pvc.Status.AllocatedResources[corev1.ResourceStorage]; got.String() != "5Gi" {
		t.Errorf("claim allocatedResources = %v", pvc.Status.AllocatedResources)
	}
	if msg := waitEvent(t, c, "default", "data", "VolumeResizeSuccessful"); msg != "ExpandVolume succeeded for volume default/data" {
		t.Errorf("VolumeResizeSuccessful message = %q", msg)
	}

	// Reclaim: the claim's deletion deletes the volume.
	if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, name)
}

func TestExternalProvisionerAndMissingClass_G20(t *testing.T) {
	t.Parallel()
	c := start(t)
	class(t, c, "ext", "example.com/nfs", storagev1.VolumeBindingImmediate, false)
	claim(t, c, "ext-claim", ptr.To("ext"), "1Gi", "")
	msg := waitEvent(t, c, "default", "ext-claim", "ExternalProvisioning")
	want := "Waiting for a volume to be created either by the external provisioner 'example.com/nfs' or manually by the system administrator. " +
		"If volume creation is delayed, please verify that the provisioner is running and correctly registered."
	if msg != want {
		t.Errorf("ExternalProvisioning message = %q", msg)
	}
	if got := getClaim(t, c, "ext-claim").Annotations["volume.kubernetes.io/storage-provisioner"]; got != "example.com/nfs" {
		t.Errorf("storage-provisioner annotation = %q", got)
	}
	claim(t, c, "no-class", ptr.To("missing"), "1Gi", "")
	if msg := waitEvent(t, c, "default", "no-class", "ProvisioningFailed"); msg != `storageclass.storage.k8s.io "missing" not found` {
		t.Errorf("ProvisioningFailed message = %q", msg)
	}
}

func TestDefaultClassAssignedAfterwards_G20(t *testing.T) {
	t.Parallel()
	c := start(t)
	// Made before there is a default class: no class at all.
	claim(t, c, "early", nil, "1Gi", "")
	waitEvent(t, c, "default", "early", "FailedBinding")
	class(t, c, "standard", persistentvolume.SimulatedProvisioner, storagev1.VolumeBindingImmediate, true)
	pvc := waitBound(t, c, "early")
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "standard" {
		t.Fatalf("claim class = %v, want standard", pvc.Spec.StorageClassName)
	}
}

func TestWaitForFirstConsumer_G20(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	class(t, c, "local", persistentvolume.SimulatedProvisioner, storagev1.VolumeBindingWaitForFirstConsumer, false)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelHostname: "node-1"}}}
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim(t, c, "late", ptr.To("local"), "1Gi", "")
	if msg := waitEvent(t, c, "default", "late", "WaitForFirstConsumer"); msg != "waiting for first consumer to be created before binding" {
		t.Errorf("WaitForFirstConsumer message = %q", msg)
	}
	if got := getClaim(t, c, "late").Status.Phase; got != corev1.ClaimPending {
		t.Fatalf("claim is %s before a node was selected, want Pending", got)
	}
	// The scheduler's choice.
	patch := []byte(`{"metadata":{"annotations":{"volume.kubernetes.io/selected-node":"node-1"}}}`)
	if _, err := c.CoreV1().PersistentVolumeClaims("default").Patch(ctx, "late", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc := waitBound(t, c, "late")
	pv := getVolume(t, c, pvc.Spec.VolumeName)
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) != 1 ||
		!slices.Equal(na.Required.NodeSelectorTerms[0].MatchExpressions[0].Values, []string{"node-1"}) {
		t.Errorf("volume node affinity = %+v, want node-1", na)
	}
}
