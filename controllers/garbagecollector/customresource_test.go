package garbagecollector_test

import (
	"context"
	"testing"
	"time"

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
	"github.com/kubegate/kubegate/controllers/garbagecollector"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testwait"
)

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widgetsCRD defines namespaced Widgets that keep any field.
func widgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	names := apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: names, Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}}}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: names, StoredVersions: []string{"v1"}}}
}

// The collector finds custom resources by discovery as it finds every
// kind: a widget owned by a config map goes with it, and a config map
// owned by a widget goes with the widget (G.8, I.2).
func TestCustomResourcesAreCollected_G8(t *testing.T) {
	t.Parallel()
	s := apiservertest.Start(t)
	crd := widgetsCRD()
	rs, err := customresource.Resources(crd)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.API.SetResources(customresource.Owner(crd), rs); err != nil {
		t.Fatal(err)
	}
	controllertest.Run(t, s, manager.Options{Descriptors: []controllers.Descriptor{garbagecollector.Descriptor}})
	ctx := context.Background()
	cs := s.Client
	dc, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	widgets := dc.Resource(widgetsGVR).Namespace("default")

	owner := configMap(t, cs, "owner", nil)
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "owned"}}}
	w.SetOwnerReferences([]metav1.OwnerReference{ownerRef(owner, false)})
	if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	parent, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "parent"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "example.com/v1", Kind: "Widget", Name: "parent", UID: parent.GetUID()}}}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, child, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := widgets.Delete(ctx, "parent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the widget and the config map of deleted owners collected", func() (bool, string) {
		_, werr := widgets.Get(ctx, "owned", metav1.GetOptions{})
		_, cerr := cs.CoreV1().ConfigMaps("default").Get(ctx, "child", metav1.GetOptions{})
		return apierrors.IsNotFound(werr) && apierrors.IsNotFound(cerr), "widget: " + errString(werr) + "; config map: " + errString(cerr)
	})
}

func errString(err error) string {
	if err == nil {
		return "still there"
	}
	return err.Error()
}
