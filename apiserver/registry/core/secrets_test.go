package core_test

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
)

// TestSecretStringDataFoldsIntoData checks that stringData is merged into
// data, winning over a data key of the same name, and never stored, on
// create, update and patch, as kube-apiserver does.
func TestSecretStringDataFoldsIntoData(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	secrets := srv.Client.CoreV1().Secrets("default")
	ctx := context.Background()
	check := func(step string, s *corev1.Secret, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		for k, v := range s.Data {
			got[k] = string(v)
		}
		if !maps.Equal(got, want) || s.StringData != nil {
			t.Errorf("%s: data %v, stringData %v; want data %v and no stringData", step, got, s.StringData, want)
		}
		stored, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: get: %v", step, err)
		}
		if stored.StringData != nil || len(stored.Data) != len(want) {
			t.Errorf("%s: stored data %v, stringData %v; want data %v and no stringData", step, stored.Data, stored.StringData, want)
		}
	}

	created, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Data:       map[string][]byte{"a": []byte("1"), "b": []byte("2")},
		StringData: map[string]string{"b": "two", "c": "3"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	check("create", created, map[string]string{"a": "1", "b": "two", "c": "3"})

	created.StringData = map[string]string{"a": "one"}
	updated, err := secrets.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	check("update", updated, map[string]string{"a": "one", "b": "two", "c": "3"})

	patched, err := secrets.Patch(ctx, "s", types.MergePatchType, []byte(`{"stringData":{"d":"4"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	check("patch", patched, map[string]string{"a": "one", "b": "two", "c": "3", "d": "4"})
}
