package apiextensions_test

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
)

// A CRD sent in protobuf whose JSON field holds what is not JSON is
// refused as kube-apiserver's decoding refuses it, with a 400, on a
// create and an update, and the server goes on answering (I.1).
func TestProtobufCRDWithInvalidJSONIsRefused_I1(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	cfg := rest.CopyConfig(ts.Config)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "foos.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "foos", Singular: "foo", Kind: "Foo", ListKind: "FooList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "string"}}}}}}}}
	bad := crd.DeepCopy()
	bad.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte("{not json")}}
	const want = `CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition: invalid character 'n' looking for beginning of object key string`
	_, err = cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("create: got %v, want 400 %q", err, want)
	}
	created, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the server after the bad create: %v", err)
	}
	bad.ResourceVersion = created.ResourceVersion
	_, err = cs.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, bad, metav1.UpdateOptions{})
	if !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("update: got %v, want 400 %q", err, want)
	}
}
