package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/internal/testwait"
)

// watchEnds waits for w to end without another event.
func watchEnds(t *testing.T, w watch.Interface, what string) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("%s: the watch sent %s %v; want it ended", what, ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the watch is still open", what)
	}
}

// watchSees waits for w to send an ADDED event of the object name.
func watchSees(t *testing.T, w watch.Interface, name, what string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s: the watch ended; want it open", what)
			}
			if acc, err := meta.Accessor(ev.Object); err == nil && ev.Type == watch.Added && acc.GetName() == name {
				return
			}
		case <-timeout:
			t.Fatalf("%s: no ADDED %s", what, name)
		}
	}
}

func deleteCRD(t *testing.T, crds clientset.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if err := crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, name+" gone", func() (bool, string) {
		_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// A watch of a custom resource ends when its CRD is deleted, as
// kube-apiserver tears the CRD's storage down: it does not go on to
// stream the objects of a CRD of another kind created in its place
// (I.2).
func TestWatchEndsWhenItsCRDGoes_I2(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	createCRD(t, s, widgetCRD("Widget", "v1"))
	dyn, err := dynamic.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	crds, err := clientset.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	w, err := dyn.Resource(widgetsIn("v1")).Namespace("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deleteCRD(t, crds, "widgets.example.com")
	createCRD(t, s, widgetCRD("Gadget", "v1"))
	// The new definition's kind is served a moment after it is
	// established.
	testwait.For(t, 30*time.Second, "a Gadget created", func() (bool, string) {
		_, err := dyn.Resource(widgetsIn("v1")).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}}}, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	watchEnds(t, w, "after the CRD was deleted")
}

// A change of a CRD's spec ends the watches of its custom resources, as
// kube-apiserver tears the storage down for a new spec or new accepted
// names; a change of its metadata alone does not, nor does another CRD
// coming and going, which leaves a built-in resource's watches open too
// (I.2).
func TestWatchEndsWhenItsCRDSpecChanges_I2(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	createCRD(t, s, widgetCRD("Widget", "v1"))
	dyn, err := dynamic.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	crds, err := clientset.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	widgets, err := dyn.Resource(widgetsIn("v1")).Namespace("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer widgets.Stop()
	configMaps, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer configMaps.Stop()

	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Labels = map[string]string{"changed": "metadata"}
	if crd, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The label change is followed before the gadgets' definition is.
	gadgets := widgetCRD("Gadget", "v1")
	gadgets.Name, gadgets.Spec.Names = "gadgets.example.com", apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"}
	createCRD(t, s, gadgets)
	deleteCRD(t, crds, gadgets.Name)
	testwait.For(t, 30*time.Second, "gadgets no longer served", func() (bool, string) {
		_, err := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}).List(ctx, metav1.ListOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := dyn.Resource(widgetsIn("v1")).Namespace("default").Create(ctx, widgetIn("v1", "w"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	watchSees(t, widgets, "w", "widgets after a label of their CRD changed and another CRD went")
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	watchSees(t, configMaps, "one", "config maps after another CRD went")

	crd.Spec.Versions[0].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	watchEnds(t, widgets, "after a column was added to the CRD")
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	watchSees(t, configMaps, "two", "config maps after the CRD changed")
}
