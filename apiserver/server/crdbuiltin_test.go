package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/internal/testwait"
)

// A user who may only manage CustomResourceDefinitions defines one named
// for a built-in resource, in a version kubegate serves and in one it does
// not, then deletes it: the built-in objects are neither served through it
// nor deleted by the CRD finalizer, which runs as the loopback identity
// (I.2).
func TestCRDNamedForABuiltInNeitherServesNorDeletesIt_I2(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "crd-manager"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crd-manager"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "crd-manager"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "crd-author", APIGroup: rbacv1.GroupName}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(s.LoopbackConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "crd-author"}
	author, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before, err := admin.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil || len(before.Items) == 0 {
		t.Fatalf("cluster roles before: %d, %v", len(before.Items), err)
	}
	dyn, err := dynamic.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	preserve := true
	for _, version := range []string{"v1", "v1alpha1"} {
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "clusterroles.rbac.authorization.k8s.io",
				Annotations: map[string]string{"api-approved.kubernetes.io": "https://example.com/approved"}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: rbacv1.GroupName, Scope: apiextensionsv1.ClusterScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "clusterroles", Singular: "clusterrole", Kind: "ClusterRole", ListKind: "ClusterRoleList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}}}}
		// The binding reaches the authorizer a moment after it is
		// written.
		testwait.For(t, 30*time.Second, version+": the CRD created", func() (bool, string) {
			_, err := author.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
			if err != nil && !apierrors.IsForbidden(err) {
				t.Fatalf("%s: %v", version, err)
			}
			return err == nil, fmt.Sprint(err)
		})
		testwait.For(t, 30*time.Second, version+": the CRD established", func() (bool, string) {
			got, err := author.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return conditionTrue(got, apiextensionsv1.Established), fmt.Sprint(got.Status.Conditions)
		})
		if version != "v1" {
			// Built-in cluster roles are stored under the same group and
			// resource: the CRD's version is not served.
			_, err := dyn.Resource(schema.GroupVersionResource{Group: rbacv1.GroupName, Version: version, Resource: "clusterroles"}).
				List(ctx, metav1.ListOptions{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("%s: list through the CRD's version: got %v, want 404", version, err)
			}
		}
		if err := author.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 30*time.Second, version+": the CRD gone once its finalizer ran", func() (bool, string) {
			_, err := author.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		after, err := admin.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		if err != nil || len(after.Items) != len(before.Items) {
			t.Fatalf("%s: cluster roles after the CRD's deletion: %d, %v; want %d", version, len(after.Items), err, len(before.Items))
		}
	}
}

// A CRD may serve a resource of its own in rbac.authorization.k8s.io
// whose kind is ClusterRoleBinding: a user who may only create its
// objects writes one that binds her to cluster-admin, and gains nothing,
// because the RBAC rules come from the four RBAC resources alone (C.2).
func TestCustomResourceInTheRBACGroupBindsNobody_C2(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	crds, err := clientset.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "notes.rbac.authorization.k8s.io",
			Annotations: map[string]string{"api-approved.kubernetes.io": "unapproved, notes"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: rbacv1.GroupName, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "notes", Singular: "note", Kind: "ClusterRoleBinding", ListKind: "NoteList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}}}}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := func(name string, rule rbacv1.PolicyRule) {
		t.Helper()
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "mallory", APIGroup: rbacv1.GroupName}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind("note-writer", rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"notes"}})
	cfg := rest.CopyConfig(s.LoopbackConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory"}
	mallory, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	note := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "mallory-admin"},
		"roleRef":  map[string]any{"apiGroup": rbacv1.GroupName, "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"kind": "User", "apiGroup": rbacv1.GroupName, "name": "mallory"}},
	}}
	// Until the CRD is established and the binding has reached the
	// authorizer, the create is refused.
	testwait.For(t, 30*time.Second, "mallory's note created", func() (bool, string) {
		_, err := notes.Resource(rbacv1.SchemeGroupVersion.WithResource("notes")).Create(ctx, note, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	// The authorizer follows the store in order: once a binding written
	// after the note counts, the note has been seen.
	bind("namespace-reader", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"namespaces"}})
	testwait.For(t, 30*time.Second, "mallory reads namespaces", func() (bool, string) {
		_, err := mallory.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if _, err := mallory.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("mallory lists kube-system secrets after writing a note that looks like a binding to cluster-admin: err %v, want 403", err)
	}
}
