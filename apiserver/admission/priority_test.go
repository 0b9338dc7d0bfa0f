package admission

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

func putPriorityClass(t *testing.T, st store.Store, pc schedulingv1.PriorityClass) {
	t.Helper()
	pc.TypeMeta = metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"}
	data, _ := json.Marshal(pc)
	if _, err := st.Create(context.Background(), apiserver.Key(apiserver.PriorityClassesGVR, "", pc.Name), data); err != nil {
		t.Fatal(err)
	}
}

func TestPodPriority_D11(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	never := corev1.PreemptNever
	putPriorityClass(t, st, schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: &never})
	admit := func(pod *corev1.Pod) error {
		return Priority(st).Admit(context.Background(), &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: podsGVR,
			Namespace: "default", Name: pod.Name, Object: pod})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{PriorityClassName: "high"}}
	if err := admit(pod); err != nil {
		t.Fatal(err)
	}
	if *pod.Spec.Priority != 1000 || *pod.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("priority %d policy %s, want the class's 1000 Never", *pod.Spec.Priority, *pod.Spec.PreemptionPolicy)
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	if err := admit(plain); err != nil || *plain.Spec.Priority != 0 || *plain.Spec.PreemptionPolicy != corev1.PreemptLowerPriority || plain.Spec.PriorityClassName != "" {
		t.Errorf("a pod without a class and no default: %v, %+v", err, plain.Spec)
	}

	five := int32(5)
	for _, tt := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "noprio"}, Spec: corev1.PodSpec{PriorityClassName: "missing"}},
			`pods "noprio" is forbidden: no PriorityClass with name missing was found`},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "own"}, Spec: corev1.PodSpec{Priority: &five}},
			`pods "own" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`},
	} {
		if err := admit(tt.pod); !apierrors.IsForbidden(err) || err.Error() != tt.want {
			t.Errorf("got %v, want Forbidden %s", err, tt.want)
		}
	}

	putPriorityClass(t, st, schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "normal"}, Value: 10, GlobalDefault: true})
	def := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "def"}}
	if err := admit(def); err != nil || *def.Spec.Priority != 10 || def.Spec.PriorityClassName != "normal" {
		t.Errorf("a pod without a class and a global default: %v, %+v", err, def.Spec)
	}
}

func TestPriorityClassRules_D11(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	putPriorityClass(t, st, schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "def1"}, Value: 10, GlobalDefault: true})
	second := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "def2"}, Value: 11, GlobalDefault: true}
	err := Priority(st).Admit(context.Background(), &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: apiserver.PriorityClassesGVR, Name: "def2", Object: second})
	if want := `priorityclasses.scheduling.k8s.io "def2" is forbidden: PriorityClass def1 is already marked as default. Only one default can exist`; err == nil || err.Error() != want {
		t.Errorf("a second global default: got %v, want %s", err, want)
	}

}

// Given the server's Lister, the ServiceAccount and Priority plugins read
// service accounts and priority classes from it, not from the store, as
// kube's plugins read informers (D.8, D.11): here the store is empty.
func TestPluginsReadThroughTheLister_D8(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	l := fakeLister{
		serviceAccounts: map[string]*corev1.ServiceAccount{"default/builder": {ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "default"},
			AutomountServiceAccountToken: new(bool)}},
		priorityClasses: map[string]*schedulingv1.PriorityClass{
			"high":   {ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
			"normal": {ObjectMeta: metav1.ObjectMeta{Name: "normal"}, Value: 10, GlobalDefault: true},
		},
	}
	sa, prio := ServiceAccount(st), Priority(st)
	for _, p := range []apiserver.Admission{sa, prio} {
		p.(apiserver.WantsLister).SetLister(l)
	}
	admit := func(p apiserver.Admission, pod *corev1.Pod) error {
		return p.Admit(context.Background(), &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: podsGVR,
			Namespace: "default", Name: pod.Name, Object: pod})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{ServiceAccountName: "builder",
		Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if err := admit(sa, pod); err != nil {
		t.Fatalf("a service account only the lister has: %v", err)
	}
	missing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: corev1.PodSpec{ServiceAccountName: "nobody"}}
	if err := admit(sa, missing); !apierrors.IsForbidden(err) {
		t.Errorf("a service account neither has: %v, want Forbidden", err)
	}
	if err := admit(prio, pod); err != nil || *pod.Spec.Priority != 10 || pod.Spec.PriorityClassName != "normal" {
		t.Errorf("the lister's global default: %v, %+v", err, pod.Spec)
	}
	high := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "h"}, Spec: corev1.PodSpec{PriorityClassName: "high"}}
	if err := admit(prio, high); err != nil || *high.Spec.Priority != 1000 {
		t.Errorf("a class only the lister has: %v, %+v", err, high.Spec)
	}
}
