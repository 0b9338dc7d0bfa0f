package admission

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

func putNamespace(t *testing.T, st store.Store, ns *corev1.Namespace) int64 {
	t.Helper()
	ns.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
	data, _ := json.Marshal(ns)
	rev, err := st.Create(context.Background(), apiserver.Key(namespacesGVR, "", ns.Name), data)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestServiceAccountDefault(t *testing.T) {
	t.Parallel()
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
			if err := ServiceAccount().Admit(context.Background(), a); err != nil {
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
