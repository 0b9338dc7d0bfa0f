package authentication

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn/bootstrap"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/store/bolt"
)

func TestGetterReadsTheStore(t *testing.T) {
	t.Parallel()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	put := func(gvr schema.GroupVersionResource, ns, name string, obj any) {
		data, _ := json.Marshal(obj)
		if _, err := st.Create(ctx, apiserver.Key(gvr, ns, name), data); err != nil {
			t.Fatal(err)
		}
	}
	deleting := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	put(serviceAccountsGVR, "default", "default", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{UID: "sa-uid"}})
	put(podsGVR, "default", "app", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "pod-uid", DeletionTimestamp: &deleting}})
	put(secretsGVR, "default", "tok", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{UID: "secret-uid", Labels: map[string]string{"a": "b"}},
		Data: map[string][]byte{"token": []byte("t0k")}})
	put(nodesGVR, "", "n1", &corev1.Node{ObjectMeta: metav1.ObjectMeta{UID: "node-uid"}})
	g := Getter{Store: st}

	sa, err := g.GetServiceAccount(ctx, "default", "default")
	if err != nil || sa.UID != "sa-uid" || !sa.DeletionTimestamp.IsZero() {
		t.Errorf("service account: got %+v, %v", sa, err)
	}
	pod, err := g.GetPod(ctx, "default", "app")
	if err != nil || pod.UID != "pod-uid" || !pod.DeletionTimestamp.Equal(deleting.Time) {
		t.Errorf("pod: got %+v, %v", pod, err)
	}
	sec, err := g.GetSecret(ctx, "default", "tok")
	if err != nil || sec.UID != "secret-uid" || string(sec.Token) != "t0k" || sec.Labels["a"] != "b" {
		t.Errorf("secret: got %+v, %v", sec, err)
	}
	node, err := g.GetNode(ctx, "n1")
	if err != nil || node.UID != "node-uid" {
		t.Errorf("node: got %+v, %v", node, err)
	}
	if _, err := g.GetServiceAccount(ctx, "other", "default"); !errors.Is(err, serviceaccount.ErrNotFound) {
		t.Errorf("missing service account: got %v, want ErrNotFound", err)
	}
	if _, err := g.GetNode(ctx, "n2"); !errors.Is(err, serviceaccount.ErrNotFound) {
		t.Errorf("missing node: got %v, want ErrNotFound", err)
	}
}

// The bootstrap token authenticator reads its Secrets from the store (A.10).
func TestGetterReadsBootstrapSecrets_A10(t *testing.T) {
	t.Parallel()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	deleting := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef", DeletionTimestamp: &deleting},
		Type:       "bootstrap.kubernetes.io/token",
		Data:       map[string][]byte{"token-id": []byte("abcdef")},
	}
	data, _ := json.Marshal(sec)
	if _, err := st.Create(ctx, apiserver.Key(secretsGVR, "kube-system", "bootstrap-token-abcdef"), data); err != nil {
		t.Fatal(err)
	}
	g := Getter{Store: st}
	got, err := g.GetSecretData(ctx, "kube-system", "bootstrap-token-abcdef")
	if err != nil || got.Namespace != "kube-system" || got.Name != "bootstrap-token-abcdef" || got.Type != "bootstrap.kubernetes.io/token" ||
		string(got.Data["token-id"]) != "abcdef" || !got.DeletionTimestamp.Equal(deleting.Time) {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := g.GetSecretData(ctx, "default", "bootstrap-token-abcdef"); !errors.Is(err, bootstrap.ErrNotFound) {
		t.Errorf("missing secret: got %v, want bootstrap.ErrNotFound", err)
	}
}
