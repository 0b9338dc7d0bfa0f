package ownership_test

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers/ownership"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Through the API server: an orphan the selector matches is adopted, an
// owned pod it no longer matches is released, a pod another controller
// owns is left alone, and the owner being stale stops adoption.
func TestClaimAdoptsAndReleases_G1(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "default", UID: "owner-uid"}}
	other := ownership.ControllerRef(&metav1.ObjectMeta{Name: "x", UID: "other-uid"}, rsKind)
	mine := ownership.ControllerRef(owner, rsKind)
	mk := func(name string, lbl map[string]string, refs ...metav1.OwnerReference) *corev1.Pod {
		p, err := s.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl, OwnerReferences: refs},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	app := map[string]string{"app": "a"}
	pods := []*corev1.Pod{
		mk("orphan", app),
		mk("owned", app, mine),
		mk("moved", map[string]string{"app": "b"}, mine),
		mk("foreign", app, other),
	}
	patch := func(ctx context.Context, ns, name string, body []byte) error {
		_, err := s.Client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		return err
	}
	sel := labels.SelectorFromSet(app)
	stale := func(context.Context) (bool, error) { return false, nil }
	got, err := ownership.Claim(ctx, owner, rsKind, sel, pods, stale, patch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "owned" {
		t.Errorf("with a stale owner claimed %v, want only owned", podNames(got))
	}
	live := func(context.Context) (bool, error) { return true, nil }
	got, err = ownership.Claim(ctx, owner, rsKind, sel, pods, live, patch)
	if err != nil {
		t.Fatal(err)
	}
	if names := podNames(got); len(names) != 2 || names[0] != "orphan" || names[1] != "owned" {
		t.Errorf("claimed %v, want orphan and owned", names)
	}
	for name, wantUID := range map[string]types.UID{"orphan": "owner-uid", "moved": "", "foreign": "other-uid"} {
		p, err := s.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var uid types.UID
		if ref := metav1.GetControllerOf(p); ref != nil {
			uid = ref.UID
			if name == "orphan" && (ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion) {
				t.Errorf("adopted pod's reference %+v lacks blockOwnerDeletion", ref)
			}
		}
		if uid != wantUID {
			t.Errorf("pod %s controlled by %q, want %q", name, uid, wantUID)
		}
	}
}

func podNames(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestExpectations_G1(t *testing.T) {
	var e ownership.Expectations
	if !e.Satisfied("k") {
		t.Error("a key never expected is not satisfied")
	}
	e.Expect("k", 2, 1)
	e.Observed("k", true)
	e.Observed("k", false)
	if e.Satisfied("k") {
		t.Error("satisfied with one creation outstanding")
	}
	e.Observed("k", true)
	e.Observed("k", true) // more than expected does not go negative
	if !e.Satisfied("k") {
		t.Error("not satisfied after every write was seen")
	}
}

// Recheck: the owner is live only when the object read again has its UID
// and is not being deleted; a failed read is an error (G.1).
func TestRecheckWantsTheSameLiveOwner_G1(t *testing.T) {
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1"}}
	deleting := metav1.Now()
	failed := errors.New("unreachable")
	for _, tc := range []struct {
		name string
		read *appsv1.ReplicaSet
		err  error
		live bool
	}{
		{"same", &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1"}}, nil, true},
		{"replaced", &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u2"}}, nil, false},
		{"deleting", &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1", DeletionTimestamp: &deleting}}, nil, false},
		{"failed", nil, failed, false},
	} {
		fresh := ownership.Recheck(owner, func(context.Context) (metav1.Object, error) {
			if tc.err != nil {
				return nil, tc.err
			}
			return tc.read, nil
		})
		live, err := fresh(context.Background())
		if live != tc.live || !errors.Is(err, tc.err) {
			t.Errorf("%s: live %v, err %v; want %v, %v", tc.name, live, err, tc.live, tc.err)
		}
	}
}
