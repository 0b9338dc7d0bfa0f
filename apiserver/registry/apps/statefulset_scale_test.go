package apps_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
)

// A StatefulSet with volume claim templates scales, as kubectl scale
// patches it, and takes an update of itself unchanged: the templates as
// stored are the templates it was given (D.5).
func TestStatefulSetWithClaimTemplatesScales_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	ctx := context.Background()
	labels := map[string]string{"app": "db"}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Spec: appsv1.StatefulSetSpec{
		Replicas: new(int32(3)), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db"}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
	}}
	if _, err := srv.Client.AppsV1().StatefulSets("default").Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.AppsV1().StatefulSets("default").Patch(ctx, "db", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`),
		metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("scale: %v", err)
	}
	got, err := srv.Client.AppsV1().StatefulSets("default").Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 1 {
		t.Errorf("replicas after scaling = %d, want 1", *got.Spec.Replicas)
	}
	if _, err := srv.Client.AppsV1().StatefulSets("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("update unchanged: %v", err)
	}
}
