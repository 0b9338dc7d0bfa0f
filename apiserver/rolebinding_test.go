package apiserver

import (
	"context"
	"encoding/json"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A binding stored without a roleRef API group, as clients could write
// before the group was defaulted, still takes updates that leave the
// reference alone.
func TestBindingStoredWithoutRoleRefGroup(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	old := rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "default", UID: "u1"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dev"}}}
	data, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.store.Create(ctx, Key(rbacv1.SchemeGroupVersion.WithResource("rolebindings"), "default", "legacy"), data); err != nil {
		t.Fatal(err)
	}
	got, err := cs.RbacV1().RoleBindings("default").Patch(ctx, "legacy", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"dev"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch of labels: %v", err)
	}
	if want := (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}); got.RoleRef != want {
		t.Errorf("roleRef = %+v, want the defaulted original", got.RoleRef)
	}
}
