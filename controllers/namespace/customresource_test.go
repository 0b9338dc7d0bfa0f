package namespace_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/apiserver/customresource"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/namespace"
	"github.com/kubegate/kubegate/internal/testwait"
)

// A deleted namespace's custom resources are deleted with the rest of
// its contents: the controller finds them by discovery (G.9, I.2).
func TestNamespaceDeletionDeletesCustomResources_G9(t *testing.T) {
	t.Parallel()
	s := apiservertest.Start(t)
	names := apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: names, Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}}}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: names, StoredVersions: []string{"v1"}}}
	rs, err := customresource.Resources(crd)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.API.SetResources(customresource.Owner(crd), rs); err != nil {
		t.Fatal(err)
	}
	controllertest.Run(t, s, manager.Options{Descriptors: []controllers.Descriptor{namespace.Descriptor}})
	core := s.Client.CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	widgets := dc.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("team")
	if _, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := core.Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "the namespace and its widget gone", func() (bool, string) {
		_, werr := widgets.Get(ctx, "w", metav1.GetOptions{})
		_, nerr := core.Namespaces().Get(ctx, "team", metav1.GetOptions{})
		return apierrors.IsNotFound(werr) && apierrors.IsNotFound(nerr), "widget: " + fmtErr(werr) + "; namespace: " + fmtErr(nerr)
	})
}

func fmtErr(err error) string {
	if err == nil {
		return "still there"
	}
	return err.Error()
}
