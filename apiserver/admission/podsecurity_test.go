package admission

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/warning"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

// warnings collects what a plugin warns.
type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

func labelled(name string, kv ...string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		ns.Labels[kv[i]] = kv[i+1]
	}
	return ns
}

// The messages are kube-apiserver v1.37.2's, with its default Pod
// Security configuration.
func TestPodSecurityPods_D8(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ps := PodSecurity(st).(*podSecurity)
	ps.SetLister(fakeLister{namespaces: map[string]*corev1.Namespace{
		"open":        labelled("open"),
		"kube-system": labelled("kube-system", "pod-security.kubernetes.io/enforce", "baseline"),
		"warned":      labelled("warned", "pod-security.kubernetes.io/warn", "baseline"),
	}})
	hostNetwork := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{HostNetwork: true,
		Containers: []corev1.Container{{Name: "app", Image: "x"}}}}
	tests := []struct {
		name, namespace string
		op              apiserver.Operation
		sub             string
		old             *corev1.Pod
		wantErr         string
		wantWarnings    []string
	}{
		{name: "unlabelled namespaces are privileged", namespace: "open", op: apiserver.Create},
		{name: "system namespaces are not exempt", namespace: "kube-system", op: apiserver.Create,
			wantErr: `pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`},
		{name: "warn admits with a warning", namespace: "warned", op: apiserver.Create,
			wantWarnings: []string{`would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`}},
		{name: "an update that keeps the images is not evaluated", namespace: "kube-system", op: apiserver.Update, old: hostNetwork},
		{name: "status is not evaluated", namespace: "kube-system", op: apiserver.Update, sub: "status", old: hostNetwork},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w warnings
			ctx := warning.WithWarningRecorder(context.Background(), &w)
			a := &apiserver.AdmissionAttributes{Operation: tt.op, Resource: podsGVR, Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
				Subresource: tt.sub, Namespace: tt.namespace, Name: "p", Object: hostNetwork.DeepCopy()}
			if tt.old != nil {
				a.OldObject = tt.old
			}
			err := ps.Validate(ctx, a)
			got := ""
			if err != nil {
				got = err.Error()
				if !apierrors.IsForbidden(err) {
					t.Errorf("got %v, want a 403", err)
				}
			}
			if got != tt.wantErr {
				t.Errorf("error: got %q, want %q", got, tt.wantErr)
			}
			if !slices.Equal(w, tt.wantWarnings) {
				t.Errorf("warnings: got %q, want %q", w, tt.wantWarnings)
			}
		})
	}
}

// A namespace's labels must be valid, and tightening its enforce level
// warns about the pods it already holds.
func TestPodSecurityNamespaces_D8(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ps := PodSecurity(st)
	nsKind := corev1.SchemeGroupVersion.WithKind("Namespace")

	bad := labelled("team", "pod-security.kubernetes.io/enforce", "superuser")
	err := ps.(apiserver.AdmissionValidator).Validate(context.Background(), &apiserver.AdmissionAttributes{Operation: apiserver.Create,
		Resource: namespacesGVR, Kind: nsKind, Name: "team", Object: bad})
	want := `Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "superuser": must be one of privileged, baseline, restricted`
	if err == nil || err.Error() != want || !apierrors.IsInvalid(err) {
		t.Errorf("invalid label: got %v, want 422 %s", err, want)
	}

	putNamespace(t, st, labelled("team"))
	for _, name := range []string{"b", "a"} {
		putPod(t, st, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: corev1.PodSpec{HostPID: true, Containers: []corev1.Container{{Name: "app", Image: "x"}}}})
	}
	var w warnings
	ctx := warning.WithWarningRecorder(context.Background(), &w)
	err = ps.(apiserver.AdmissionValidator).Validate(ctx, &apiserver.AdmissionAttributes{Operation: apiserver.Update,
		Resource: namespacesGVR, Kind: nsKind, Name: "team", Object: labelled("team", "pod-security.kubernetes.io/enforce", "baseline"),
		OldObject: labelled("team")})
	wantWarnings := []string{`existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest"`,
		`a (and 1 other pod): host namespaces`}
	if err != nil || !slices.Equal(w, wantWarnings) {
		t.Errorf("tightened: got %v, %q; want warnings %q", err, w, wantWarnings)
	}
}

func putPod(t *testing.T, st store.Store, pod *corev1.Pod) {
	t.Helper()
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	data, _ := json.Marshal(pod)
	if _, err := st.Create(context.Background(), apiserver.Key(podsGVR, pod.Namespace, pod.Name), data); err != nil {
		t.Fatal(err)
	}
}
