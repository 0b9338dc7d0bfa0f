package apiserver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest", Command: []string{"app"},
			Ports: []corev1.ContainerPort{{ContainerPort: 2580}},
		}}},
	}
}

func TestClientsetCRUD(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		protobuf bool
	}{{"json", false}, {"protobuf", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t)
			cs := ts.clientset(t, tc.protobuf)
			pods := cs.CoreV1().Pods("default")
			created := crudCreate(t, pods)
			crudUpdate(t, pods, created)
			crudList(t, cs, pods)
			crudRefusals(t, cs, pods)
			crudDelete(t, pods)
		})
	}
}

// crudCreate creates the pod app, with its system fields and defaults,
// and refuses a second one of that name.
func crudCreate(t *testing.T, pods corev1client.PodInterface) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	created, err := pods.Create(ctx, testPod("app"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.CreationTimestamp.IsZero() || created.ResourceVersion == "" {
		t.Errorf("created pod lacks system fields: uid %q, creationTimestamp %v, resourceVersion %q", created.UID, created.CreationTimestamp, created.ResourceVersion)
	}
	if got, want := created.Status.Phase, corev1.PodPending; got != want {
		t.Errorf("phase = %q, want %q", got, want)
	}
	if got, want := created.Spec.Containers[0].ImagePullPolicy, corev1.PullAlways; got != want {
		t.Errorf("imagePullPolicy = %q, want %q", got, want)
	}
	_, err = pods.Create(ctx, testPod("app"), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) || err.Error() != `pods "app" already exists` {
		t.Errorf("second create: got %v, want AlreadyExists pods \"app\" already exists", err)
	}
	return created
}

// crudUpdate reads the pod back, labels it tier=web, and refuses the same
// update on the stale version.
func crudUpdate(t *testing.T, pods corev1client.PodInterface, created *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	got, err := pods.Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.ResourceVersion != created.ResourceVersion || got.UID != created.UID {
		t.Errorf("get: rv %s uid %s, want rv %s uid %s", got.ResourceVersion, got.UID, created.ResourceVersion, created.UID)
	}

	got.Labels["tier"] = "web"
	updated, err := pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.ResourceVersion == got.ResourceVersion {
		t.Errorf("update kept resourceVersion %s", updated.ResourceVersion)
	}
	_, err = pods.Update(ctx, got, metav1.UpdateOptions{}) // stale
	wantMsg := `Operation cannot be fulfilled on pods "app": the object has been modified; please apply your changes to the latest version and try again`
	if !apierrors.IsConflict(err) || err.Error() != wantMsg {
		t.Errorf("stale update: got %v, want %s", err, wantMsg)
	}
}

// crudList creates a pod by generateName and lists by label, name and
// field selectors.
func crudList(t *testing.T, cs *kubernetes.Clientset, pods corev1client.PodInterface) {
	t.Helper()
	ctx := context.Background()
	gen := testPod("")
	gen.GenerateName = "web-"
	g, err := pods.Create(ctx, gen, metav1.CreateOptions{})
	if err != nil || !strings.HasPrefix(g.Name, "web-") || len(g.Name) != len("web-")+5 {
		t.Fatalf("generateName create: name %q, err %v", g.Name, err)
	}

	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "tier=web"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "app" {
		t.Errorf("list tier=web: %d items, err %v; want [app]", len(list.Items), err)
	}
	list, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + g.Name})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != g.Name {
		t.Errorf("list metadata.name: %d items, err %v", len(list.Items), err)
	}
	list, err = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Pending,spec.nodeName="})
	if err != nil || len(list.Items) != 2 {
		t.Errorf("list pending unbound pods: %d items, err %v; want 2", len(list.Items), err)
	}
	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=1"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("unknown field selector: got %v, want 400", err)
	}
}

// crudRefusals: a create in a missing namespace is 404, one with an
// invalid name 422.
func crudRefusals(t *testing.T, cs *kubernetes.Clientset, pods corev1client.PodInterface) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods("nope").Create(ctx, testPod("x"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) || err.Error() != `namespaces "nope" not found` {
		t.Errorf("create in missing namespace: got %v, want 404 namespaces \"nope\" not found", err)
	}
	bad := testPod("Bad_Name")
	if _, err := pods.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("invalid name: got %v, want 422", err)
	}
}

// crudDelete deletes app, then the rest of the collection.
func crudDelete(t *testing.T, pods corev1client.PodInterface) {
	t.Helper()
	ctx := context.Background()
	if err := pods.Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := pods.Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) || err.Error() != `pods "app" not found` {
		t.Errorf("get after delete: got %v, want pods \"app\" not found", err)
	}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deletecollection: %v", err)
	}
	if list, _ := pods.List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("after deletecollection: %d pods, want 0", len(list.Items))
	}
}

func TestGracefulPodDeletion(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, true)
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("default")
	p := testPod("app")
	p.Spec.NodeName = "n1"
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "app", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("after delete: %+v, %v; want the pod marked deleting with a 30s grace period", got.ObjectMeta, err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after delete with grace 0: got %v, want 404", err)
	}
}
