package volumeprotection_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func gone(c kubernetes.Interface, get func() (metav1.Object, error)) (bool, string) {
	o, err := get()
	if apierrors.IsNotFound(err) {
		return true, ""
	}
	if err != nil {
		return false, err.Error()
	}
	return false, fmt.Sprintf("still there, finalizers %v", o.GetFinalizers())
}

func TestClaimKeptWhileAPodUsesIt_G20(t *testing.T) {
	t.Parallel()
	s := controllertest.StartWith(t, manager.Options{Logger: slog.New(slog.DiscardHandler), Descriptors: []controllers.Descriptor{
		volumeprotection.ClaimDescriptor, volumeprotection.VolumeDescriptor, persistentvolume.Descriptor}})
	c, ctx := s.Client, context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "vol"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: "data"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "node-1",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes:    []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "claim bound", func() (bool, string) {
		got, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == corev1.ClaimBound, string(got.Status.Phase)
	})
	getClaim := func() (metav1.Object, error) {
		return c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	}
	getVolume := func() (metav1.Object, error) {
		return c.CoreV1().PersistentVolumes().Get(ctx, "vol", metav1.GetOptions{})
	}

	// The volume, Bound, outlives its deletion while its claim lasts.
	if err := c.CoreV1().PersistentVolumes().Delete(ctx, "vol", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The claim, used by a scheduled pod, outlives its deletion.
	if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A marker: a claim no pod uses goes at once, so the controller has
	// looked at data by the time it is gone.
	marker := pvc.DeepCopy()
	marker.Name = "marker"
	if _, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "marker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "marker deleted", func() (bool, string) {
		return gone(c, func() (metav1.Object, error) {
			return c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "marker", metav1.GetOptions{})
		})
	})
	o, err := getClaim()
	if err != nil {
		t.Fatalf("claim used by a pod was deleted: %v", err)
	}
	if !slices.Equal(o.GetFinalizers(), []string{volumeprotection.ClaimFinalizer}) || o.GetDeletionTimestamp() == nil {
		t.Errorf("claim finalizers %v, deletionTimestamp %v", o.GetFinalizers(), o.GetDeletionTimestamp())
	}
	if _, err := getVolume(); err != nil {
		t.Fatalf("bound volume was deleted: %v", err)
	}
	// The pod goes: the claim goes, the volume is Released, and goes.
	if err := c.CoreV1().Pods("default").Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "claim deleted", func() (bool, string) { return gone(c, getClaim) })
	testwait.For(t, wait, "volume deleted", func() (bool, string) { return gone(c, getVolume) })
}
