package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
)

// quotaWithStatus makes namespace ns and a quota in it whose status is
// filled (hard = spec.hard, used = 0), as the quota controller would.
func quotaWithStatus(t *testing.T, c kubernetes.Interface, ns string, spec corev1.ResourceQuotaSpec) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	q, err := c.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status.Hard = spec.Hard.DeepCopy()
	q.Status.Used = corev1.ResourceList{}
	for n := range spec.Hard {
		q.Status.Used[n] = resource.MustParse("0")
	}
	if _, err := c.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func quotaPod(name string, podRes *corev1.ResourceRequirements, ctr corev1.ResourceRequirements) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Resources: podRes,
		Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: ctr}}}}
}

// kube's pod evaluator charges requests.<extended resource>; a quota of
// requests.example.com/gpu: 1 refuses a pod asking for 5.
func TestQuotaChargesExtendedResources_D14(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	quotaWithStatus(t, c, "ns", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.example.com/gpu": resource.MustParse("1")}})
	gpu := corev1.ResourceList{"example.com/gpu": resource.MustParse("5")}
	_, err := c.CoreV1().Pods("ns").Create(context.Background(), quotaPod("p", nil, corev1.ResourceRequirements{Requests: gpu, Limits: gpu}), metav1.CreateOptions{})
	q, _ := c.CoreV1().ResourceQuotas("ns").Get(context.Background(), "q", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("pod asking for 5 example.com/gpu under a quota of 1: err = %v, want kube's 403 exceeded quota; quota used now %v", err, q.Status.Used)
	}
}

// kube's pvc evaluator matches a quota scoped to a VolumeAttributesClass.
func TestQuotaVolumeAttributesClassScope_D14(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	quotaWithStatus(t, c, "ns", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: resource.MustParse("1")},
		ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"gold"}}}}})
	gold := "gold"
	var errs []error
	for _, name := range []string{"a", "b", "c"} {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeAttributesClassName: &gold,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		_, err := c.CoreV1().PersistentVolumeClaims("ns").Create(context.Background(), pvc, metav1.CreateOptions{})
		errs = append(errs, err)
	}
	if errs[0] != nil || !apierrors.IsForbidden(errs[1]) || !apierrors.IsForbidden(errs[2]) {
		t.Errorf("three gold claims under a gold-scoped quota of 1 claim: errs = %v, want nil then two 403s", errs)
	}
}

// kube classes a pod by its pod-level resources: one asking for 2 cpus
// at pod level is not BestEffort and falls under a NotBestEffort quota.
func TestQuotaPodLevelResourcesAreNotBestEffort_D14(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	quotaWithStatus(t, c, "ns", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")},
		Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}})
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	_, err := c.CoreV1().Pods("ns").Create(context.Background(), quotaPod("p", &corev1.ResourceRequirements{Requests: cpu, Limits: cpu}, corev1.ResourceRequirements{}), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("pod asking for 2 cpus at pod level under a NotBestEffort quota of 1 cpu: err = %v, want kube's 403 exceeded quota", err)
	}
}

// kube skips the per-container cpu/memory requirement when pod-level
// resources are set: a pod with 500m at pod level fits a 1 cpu quota.
func TestQuotaPodLevelResourcesStandForContainers_D14(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	quotaWithStatus(t, c, "ns", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}})
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	_, err := c.CoreV1().Pods("ns").Create(context.Background(), quotaPod("p", &corev1.ResourceRequirements{Requests: cpu, Limits: cpu}, corev1.ResourceRequirements{}), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("pod with pod-level cpu under a 1 cpu quota: err = %v, want it admitted as kube does", err)
	}
}
