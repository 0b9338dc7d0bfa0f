package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
	"github.com/kubegate/kubegate/store/bolt"
)

func openStore(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var fixedNow = func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }

func putNamespace(t testing.TB, st store.Store, ns *corev1.Namespace) int64 {
	t.Helper()
	ns.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
	data, _ := json.Marshal(ns)
	rev, err := st.Create(context.Background(), apiserver.Key(namespacesGVR, "", ns.Name), data)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func putServiceAccount(t testing.TB, st store.Store, sa *corev1.ServiceAccount) {
	t.Helper()
	sa.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}
	data, _ := json.Marshal(sa)
	if _, err := st.Create(context.Background(), apiserver.Key(serviceAccountsGVR, sa.Namespace, sa.Name), data); err != nil {
		t.Fatal(err)
	}
}

func TestServiceAccountDefault_D8(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	for _, name := range []string{"default", "builder", "old"} {
		putServiceAccount(t, st, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	tests := []struct {
		name string
		op   apiserver.Operation
		pod  corev1.Pod
		want string
	}{
		{"empty becomes default", apiserver.Create, corev1.Pod{}, "default"},
		{"a named account stays", apiserver.Create, corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "builder"}}, "builder"},
		{"the deprecated field is honoured", apiserver.Create, corev1.Pod{Spec: corev1.PodSpec{DeprecatedServiceAccount: "old"}}, "old"},
		{"mirror pods are left alone", apiserver.Create, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{mirrorPodAnnotation: "x"}}}, ""},
		{"updates are left alone", apiserver.Update, corev1.Pod{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			a := &apiserver.AdmissionAttributes{Operation: tt.op, Resource: podsGVR, Namespace: "default", Object: &pod}
			if err := ServiceAccount(st).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if pod.Spec.ServiceAccountName != tt.want {
				t.Fatalf("serviceAccountName: got %q, want %q", pod.Spec.ServiceAccountName, tt.want)
			}
			if tt.want != "" && pod.Spec.DeprecatedServiceAccount != tt.want {
				t.Fatalf("serviceAccount: got %q, want %q", pod.Spec.DeprecatedServiceAccount, tt.want)
			}
		})
	}
}

func TestServiceAccountMustExist_D8(t *testing.T) {
	t.Parallel()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nosa"}, Spec: corev1.PodSpec{ServiceAccountName: "missing"}}
	a := &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: podsGVR, Namespace: "x", Name: "nosa", Object: &pod}
	err := ServiceAccount(openStore(t)).Admit(context.Background(), a)
	want := `pods "nosa" is forbidden: error looking up service account x/missing: serviceaccount "missing" not found`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want Forbidden %s", err, want)
	}
}

func TestServiceAccountTokenVolume_D8(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	no := false
	putServiceAccount(t, st, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}})
	putServiceAccount(t, st, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "quiet"}, AutomountServiceAccountToken: &no})
	admit := func(t *testing.T, pod *corev1.Pod) {
		t.Helper()
		a := &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: podsGVR, Namespace: "default", Object: pod}
		if err := ServiceAccount(st).Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}

	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "own", VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: TokenMountPath}}}},
	}}
	admit(t, pod)
	if len(pod.Spec.Volumes) != 1 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, "kube-api-access-") || len(pod.Spec.Volumes[0].Name) != len("kube-api-access-")+5 {
		t.Fatalf("volumes = %+v, want one kube-api-access-XXXXX", pod.Spec.Volumes)
	}
	v := pod.Spec.Volumes[0]
	got, _ := json.Marshal(v.Projected)
	want := `{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},` +
		`{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}`
	if string(got) != want {
		t.Errorf("projected volume:\n got %s\nwant %s", got, want)
	}
	mount := corev1.VolumeMount{Name: v.Name, ReadOnly: true, MountPath: TokenMountPath}
	if m := pod.Spec.InitContainers[0].VolumeMounts; len(m) != 1 || !reflect.DeepEqual(m[0], mount) {
		t.Errorf("init container mounts = %+v, want %+v", m, mount)
	}
	if m := pod.Spec.Containers[0].VolumeMounts; len(m) != 1 || !reflect.DeepEqual(m[0], mount) {
		t.Errorf("container mounts = %+v, want %+v", m, mount)
	}
	if m := pod.Spec.Containers[1].VolumeMounts; len(m) != 1 || m[0].Name != "mine" {
		t.Errorf("a container with its own mount at the token path got %+v", m)
	}
	if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets = %+v, want the service account's regcred", pod.Spec.ImagePullSecrets)
	}

	for name, pod := range map[string]*corev1.Pod{
		"the pod opts out":             {Spec: corev1.PodSpec{AutomountServiceAccountToken: &no, Containers: []corev1.Container{{Name: "app"}}}},
		"the service account opts out": {Spec: corev1.PodSpec{ServiceAccountName: "quiet", Containers: []corev1.Container{{Name: "app"}}}},
	} {
		admit(t, pod)
		if len(pod.Spec.Volumes) != 0 || len(pod.Spec.Containers[0].VolumeMounts) != 0 {
			t.Errorf("%s: got volumes %+v", name, pod.Spec.Volumes)
		}
	}
}

func TestDefaultTolerationSeconds_D8(t *testing.T) {
	t.Parallel()
	three := int64(3)
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		want        []string
	}{
		{"none", nil, []string{"node.kubernetes.io/not-ready:NoExecute:300", "node.kubernetes.io/unreachable:NoExecute:300"}},
		{"one already tolerated", []corev1.Toleration{{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &three}},
			[]string{"node.kubernetes.io/unreachable:NoExecute:3", "node.kubernetes.io/not-ready:NoExecute:300"}},
		{"a toleration of every taint", []corev1.Toleration{{Operator: "Exists"}}, []string{"::0"}},
		{"another effect does not count", []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoSchedule"}},
			[]string{"node.kubernetes.io/not-ready:NoSchedule:0", "node.kubernetes.io/not-ready:NoExecute:300", "node.kubernetes.io/unreachable:NoExecute:300"}},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tt.tolerations}}
		a := &apiserver.AdmissionAttributes{Operation: apiserver.Create, Resource: podsGVR, Namespace: "default", Object: pod}
		if err := DefaultTolerationSeconds().Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tol := range pod.Spec.Tolerations {
			s := int64(0)
			if tol.TolerationSeconds != nil {
				s = *tol.TolerationSeconds
			}
			got = append(got, fmt.Sprintf("%s:%s:%d", tol.Key, tol.Effect, s))
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: tolerations = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func getSA(ctx context.Context, st store.Store, ns string) (*corev1.ServiceAccount, error) {
	kv, err := st.Get(ctx, apiserver.Key(serviceAccountsGVR, ns, DefaultServiceAccountName))
	if err != nil {
		return nil, err
	}
	var sa corev1.ServiceAccount
	return &sa, apiserver.UnmarshalStored(kv.Value, &sa)
}

func TestServiceAccountsController(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	system := []string{"default", "kube-system", "kube-public", "kube-node-lease"}
	for _, ns := range system {
		putNamespace(t, st, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	c := &ServiceAccounts{Store: st, Now: fixedNow}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The system namespaces have their accounts when Start returns.
	for _, ns := range system {
		sa, err := getSA(ctx, st, ns)
		if err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		if sa.UID == "" || !sa.CreationTimestamp.Time.Equal(fixedNow()) || sa.Kind != "ServiceAccount" || sa.Namespace != ns {
			t.Fatalf("namespace %s: got %+v", ns, sa)
		}
	}
	// A new namespace gets one shortly after it is created.
	w, err := st.Watch(ctx, apiserver.Key(serviceAccountsGVR, "", ""), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSA := func(ns string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			if _, err := getSA(ctx, st, ns); err == nil {
				return
			}
			select {
			case <-w.ResultChan():
			case <-timeout:
				t.Fatalf("no default service account in %s after 10 s", ns)
			}
		}
	}
	putNamespace(t, st, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})
	waitSA("team-a")
	// EnsureDefaultServiceAccount never overwrites.
	before, _ := st.CurrentRevision(ctx)
	created, err := EnsureDefaultServiceAccount(ctx, st, "team-a", fixedNow())
	if err != nil || created {
		t.Fatalf("second ensure: created %v, err %v; want false, nil", created, err)
	}
	if after, _ := st.CurrentRevision(ctx); after != before {
		t.Fatalf("ensuring an existing account wrote to the store: revision %d → %d", before, after)
	}
	// A terminating namespace gets none.
	gone := metav1.NewTime(fixedNow())
	putNamespace(t, st, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &gone}})
	putNamespace(t, st, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}})
	waitSA("team-b") // namespaces are handled in order: "going" has been seen
	if _, err := getSA(ctx, st, "going"); err == nil {
		t.Fatal("a namespace being deleted got a service account")
	}
}
