package admission

import (
	"context"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

// fakeLister serves fixed namespaces, limit ranges, service accounts
// ("namespace/name") and priority classes.
type fakeLister struct {
	namespaces      map[string]*corev1.Namespace
	limitRanges     map[string][]*corev1.LimitRange
	serviceAccounts map[string]*corev1.ServiceAccount
	priorityClasses map[string]*schedulingv1.PriorityClass
}

func (f fakeLister) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := f.serviceAccounts[namespace+"/"+name]; ok {
		return sa, nil
	}
	return nil, store.ErrNotFound
}

func (f fakeLister) GetPriorityClass(_ context.Context, name string) (*schedulingv1.PriorityClass, error) {
	if pc, ok := f.priorityClasses[name]; ok {
		return pc, nil
	}
	return nil, store.ErrNotFound
}

func (f fakeLister) PriorityClasses() []*schedulingv1.PriorityClass {
	var out []*schedulingv1.PriorityClass
	for _, name := range slices.Sorted(maps.Keys(f.priorityClasses)) {
		out = append(out, f.priorityClasses[name])
	}
	return out
}

func (f fakeLister) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := f.namespaces[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(namespacesGVR.GroupResource(), name)
}

func (f fakeLister) LimitRanges(namespace string) []*corev1.LimitRange {
	return f.limitRanges[namespace]
}

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func newLimitRanger(lrs ...*corev1.LimitRange) apiserver.AdmissionValidator {
	l := LimitRanger().(*limitRanger)
	l.SetLister(fakeLister{limitRanges: map[string][]*corev1.LimitRange{"team": lrs}})
	return l
}

func TestLimitRangerDefaults_D8(t *testing.T) {
	t.Parallel()
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: list("cpu", "500m", "memory", "256Mi"), DefaultRequest: list("cpu", "100m", "memory", "256Mi"),
	}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Limits: list("cpu", "1"), Requests: list("cpu", "1")}}},
		Containers:     []corev1.Container{{Name: "app"}},
	}}
	a := &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: podsGVR, Namespace: "team", Object: pod}
	if err := newLimitRanger(lr).Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	want := "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; " +
		"memory request for init container init; memory limit for init container init"
	if got := pod.Annotations[limitRangerAnnotation]; got != want {
		t.Errorf("annotation:\n got %q\nwant %q", got, want)
	}
	app := pod.Spec.Containers[0].Resources
	if app.Limits.Cpu().String() != "500m" || app.Requests.Cpu().String() != "100m" || app.Limits.Memory().String() != "256Mi" {
		t.Errorf("app resources: got %v", app)
	}
	if init := pod.Spec.InitContainers[0].Resources; init.Limits.Cpu().String() != "1" {
		t.Errorf("init container: its own cpu limit was replaced: %v", init)
	}

	// Updates are left alone, as in kube.
	upd := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	a = &apiserver.AdmissionAttributes{Operation: apiserver.Update, Resource: podsGVR, Namespace: "team", Object: upd, OldObject: upd.DeepCopy()}
	if err := newLimitRanger(lr).Admit(context.Background(), a); err != nil || upd.Annotations != nil {
		t.Errorf("update: got %v, annotations %v; want nothing set", err, upd.Annotations)
	}
	// A resize is defaulted as a new pod, unless the pod is being deleted.
	a.Subresource = "resize"
	if err := newLimitRanger(lr).Admit(context.Background(), a); err != nil || upd.Spec.Containers[0].Resources.Limits.Cpu().String() != "500m" {
		t.Errorf("resize: got %v, resources %v; want the defaults", err, upd.Spec.Containers[0].Resources)
	}
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	a = &apiserver.AdmissionAttributes{Operation: apiserver.Update, Resource: podsGVR, Subresource: "resize", Namespace: "team", Object: gone.DeepCopy(), OldObject: gone}
	if err := newLimitRanger(lr).Admit(context.Background(), a); err != nil || a.Object.(*corev1.Pod).Spec.Containers[0].Resources.Limits != nil {
		t.Errorf("resize of a pod being deleted: got %v, %v; want nothing set", err, a.Object.(*corev1.Pod).Spec.Containers[0].Resources)
	}
}

// The messages are kube-apiserver v1.37.2's LimitRanger's.
func TestLimitRangerRefuses_D8(t *testing.T) {
	t.Parallel()
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "bounds"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Min: list("memory", "64Mi"), Max: list("cpu", "1"), MaxLimitRequestRatio: list("memory", "2")},
		{Type: corev1.LimitTypePod, Max: list("memory", "1Gi")},
	}}}
	res := func(limits, requests corev1.ResourceList) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: limits, Requests: requests}
	}
	tests := []struct {
		name       string
		containers []corev1.ResourceRequirements
		want       string
	}{
		{"within bounds", []corev1.ResourceRequirements{res(list("cpu", "1", "memory", "128Mi"), list("cpu", "1", "memory", "64Mi"))}, ""},
		{"over max", []corev1.ResourceRequirements{res(list("cpu", "2", "memory", "128Mi"), list("cpu", "1", "memory", "64Mi"))},
			`pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2`},
		{"no limit under a max, no request over a min", []corev1.ResourceRequirements{res(list("memory", "128Mi"), list("memory", "64Mi"))},
			`pods "p" is forbidden: maximum cpu usage per Container is 1.  No limit is specified`},
		{"ratio", []corev1.ResourceRequirements{res(list("cpu", "1", "memory", "512Mi"), list("cpu", "1", "memory", "128Mi"))},
			`pods "p" is forbidden: memory max limit to request ratio per Container is 2, but provided ratio is 4.000000`},
		{"under min", []corev1.ResourceRequirements{res(list("cpu", "1", "memory", "32Mi"), list("cpu", "1", "memory", "32Mi"))},
			`pods "p" is forbidden: minimum memory usage per Container is 64Mi, but request is 32Mi`},
		{"several at once", []corev1.ResourceRequirements{res(list("cpu", "2", "memory", "32Mi"), list("cpu", "1", "memory", "32Mi"))},
			`pods "p" is forbidden: [minimum memory usage per Container is 64Mi, but request is 32Mi, maximum cpu usage per Container is 1, but limit is 2]`},
		{"the whole pod", []corev1.ResourceRequirements{
			res(list("cpu", "1", "memory", "768Mi"), list("cpu", "1", "memory", "512Mi")),
			res(list("cpu", "1", "memory", "768Mi"), list("cpu", "1", "memory", "512Mi"))},
			`pods "p" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1536Mi`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			for i, r := range tt.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
			}
			a := &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: podsGVR, Namespace: "team", Name: "p", Object: pod}
			err := newLimitRanger(lr).Validate(context.Background(), a)
			got := ""
			if err != nil {
				got = err.Error()
				if !apierrors.IsForbidden(err) {
					t.Errorf("got %v, want a 403", err)
				}
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
