package revision

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestTemplatePatchReplacesTheTemplate_G4(t *testing.T) {
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}}}
	data, err := TemplatePatch(ds)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"image":"i","name":"c","resources":{}}]}}}}`
	if string(data) != want {
		t.Errorf("patch %s\nwant  %s", data, want)
	}
	got, err := Template(&appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}})
	if err != nil || got.Labels["app"] != "a" || got.Spec.Containers[0].Image != "i" {
		t.Errorf("template back from the patch: %+v, %v", got, err)
	}
}

func TestHashesMoveWithTemplateAndCollisionCount_G4(t *testing.T) {
	a := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "1"}}}}
	b := a.DeepCopy()
	b.Spec.Containers[0].Image = "2"
	one := int32(1)
	if TemplateHash(a, nil) != TemplateHash(a.DeepCopy(), nil) {
		t.Error("equal templates hash differently")
	}
	if TemplateHash(a, nil) == TemplateHash(b, nil) || TemplateHash(a, nil) == TemplateHash(a, &one) {
		t.Error("a changed template or collision count keeps the hash")
	}
	if DataHash([]byte("x"), nil) == DataHash([]byte("x"), &one) || DataHash([]byte("x"), nil) == DataHash([]byte("y"), nil) {
		t.Error("a changed data or collision count keeps the hash")
	}
	if n := Name(strings.Repeat("a", 300), "h"); len(n) != 225 || !strings.HasSuffix(n, "a-h") {
		t.Errorf("Name of a long owner: %d characters, %q", len(n), n[len(n)-5:])
	}
}
