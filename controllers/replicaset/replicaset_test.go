package replicaset_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/replicaset"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

// start runs an API server and the given controllers against it.
func start(t *testing.T, ds ...controllers.Descriptor) *apiservertest.Server {
	t.Helper()
	return controllertest.Start(t, ds...)
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
}

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	l := map[string]string{"app": name}
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: l}, Template: template(l)}}
}

// pods lists the pods of ns whose label app is app, those being deleted
// left out.
func pods(t *testing.T, c kubernetes.Interface, app string) []corev1.Pod {
	t.Helper()
	list, err := c.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func waitPods(t *testing.T, c kubernetes.Interface, app string, n int) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	testwait.For(t, wait, fmt.Sprintf("%d pods of %s", n, app), func() (bool, string) {
		got = pods(t, c, app)
		return len(got) == n, fmt.Sprintf("%d pods", len(got))
	})
	return got
}

func names(ps []corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// setReady marks a pod Running on a node and Ready since since.
func setReady(t *testing.T, c kubernetes.Interface, p corev1.Pod, node string, since time.Time) {
	t.Helper()
	ctx := context.Background()
	if p.Spec.NodeName == "" && node != "" {
		if err := c.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := c.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Phase = corev1.PodRunning
	cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
	if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitEvent(t *testing.T, c kubernetes.Interface, reason, message string) {
	t.Helper()
	testwait.For(t, wait, "event "+reason+" "+message, func() (bool, string) {
		evs, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == reason && e.Message == message {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})
}

// A ReplicaSet of 3 gets 3 pods named from it, controlled by it, and
// says so in its status and events (G.2).
func TestCreatesPodsWithOwner_G2(t *testing.T) {
	s := start(t, replicaset.Descriptor)
	ctx := context.Background()
	rs, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := waitPods(t, s.Client, "web", 3)
	for _, p := range got {
		if p.GenerateName != "web-" || !strings.HasPrefix(p.Name, "web-") {
			t.Errorf("pod %s: generateName %q, want web-", p.Name, p.GenerateName)
		}
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || ref.Name != "web" ||
			ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("pod %s: controller %+v, want the ReplicaSet web", p.Name, ref)
		}
	}
	testwait.For(t, wait, "status", func() (bool, string) {
		cur, err := s.Client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := cur.Status
		return st.Replicas == 3 && st.FullyLabeledReplicas == 3 && st.ObservedGeneration == 1 && st.TerminatingReplicas != nil &&
			*st.TerminatingReplicas == 0, fmt.Sprintf("%+v", st)
	})
	waitEvent(t, s.Client, "SuccessfulCreate", "Created pod: "+got[0].Name)
	// No more than asked for, however often it syncs.
	if _, err := s.Client.AppsV1().ReplicaSets("default").Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, s.Client, "web", 3)
}

// Scaling down deletes unscheduled pods before scheduled ones, pending
// before running, not ready before ready, and a low deletion cost before
// a high one (G.2).
func TestScaleDownDeletesByRank_G2(t *testing.T) {
	s := start(t, replicaset.Descriptor)
	ctx := context.Background()
	if _, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("rank", 5), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ps := waitPods(t, s.Client, "rank", 5)
	slices.SortFunc(ps, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	long := time.Now().Add(-time.Hour)
	// ps[0]: unassigned. ps[1]: bound, Pending. ps[2], ps[3], ps[4]:
	// running and ready; ps[3] costs less to delete than the others.
	if err := s.Client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: ps[1].Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps[2:] {
		setReady(t, s.Client, p, "n1", long)
	}
	for i, cost := range map[int]string{2: "10", 3: "-5", 4: "10"} {
		if _, err := s.Client.CoreV1().Pods("default").Patch(ctx, ps[i].Name, types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"`+cost+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scale := func(n int32) {
		t.Helper()
		if _, err := s.Client.AppsV1().ReplicaSets("default").Patch(ctx, "rank", types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scale(4)
	left := waitPods(t, s.Client, "rank", 4)
	if slices.Contains(names(left), ps[0].Name) {
		t.Fatalf("the unassigned pod %s was kept; left %v", ps[0].Name, names(left))
	}
	scale(3)
	left = waitPods(t, s.Client, "rank", 3)
	if slices.Contains(names(left), ps[1].Name) {
		t.Fatalf("the pending pod %s was kept; left %v", ps[1].Name, names(left))
	}
	scale(2)
	left = waitPods(t, s.Client, "rank", 2)
	if want := names([]corev1.Pod{ps[2], ps[4]}); !slices.Equal(names(left), want) {
		t.Fatalf("left %v, want %v (the cheapest to delete goes first)", names(left), want)
	}
	waitEvent(t, s.Client, "SuccessfulDelete", "Deleted pod: "+ps[3].Name)
}

// An orphan the selector matches is adopted and counted; a pod whose
// labels stop matching is released and replaced (G.1, G.2).
func TestAdoptsOrphansAndReleases_G2(t *testing.T) {
	s := start(t, replicaset.Descriptor)
	ctx := context.Background()
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stray", Labels: map[string]string{"app": "adopt"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x"}}}}
	if _, err := s.Client.CoreV1().Pods("default").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("adopt", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := waitPods(t, s.Client, "adopt", 2)
	if !slices.Contains(names(got), "stray") {
		t.Fatalf("pods %v: the orphan was not counted", names(got))
	}
	testwait.For(t, wait, "adoption", func() (bool, string) {
		p, err := s.Client.CoreV1().Pods("default").Get(ctx, "stray", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.UID == rs.UID, fmt.Sprintf("owners %+v", p.OwnerReferences)
	})
	if _, err := s.Client.CoreV1().Pods("default").Patch(ctx, "stray", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app":"gone"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "release", func() (bool, string) {
		p, err := s.Client.CoreV1().Pods("default").Get(ctx, "stray", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(p.OwnerReferences) == 0, fmt.Sprintf("owners %+v", p.OwnerReferences)
	})
	if got := waitPods(t, s.Client, "adopt", 2); slices.Contains(names(got), "stray") {
		t.Fatalf("pods %v still include the released pod", names(got))
	}
}

// Ready pods are available once ready for minReadySeconds; the status
// follows without another change to the pods (G.2).
func TestStatusCountsAvailableAfterMinReady_G2(t *testing.T) {
	s := start(t, replicaset.Descriptor)
	ctx := context.Background()
	rs := newRS("avail", 3)
	rs.Spec.MinReadySeconds = 2
	if _, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ps := waitPods(t, s.Client, "avail", 3)
	setReady(t, s.Client, ps[0], "n1", time.Now().Add(-time.Hour))
	setReady(t, s.Client, ps[1], "n1", time.Now())
	status := func() appsv1.ReplicaSetStatus {
		cur, err := s.Client.AppsV1().ReplicaSets("default").Get(ctx, "avail", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cur.Status
	}
	testwait.For(t, wait, "ready 2, available 1", func() (bool, string) {
		st := status()
		return st.Replicas == 3 && st.ReadyReplicas == 2 && st.AvailableReplicas >= 1, fmt.Sprintf("%+v", st)
	})
	testwait.For(t, wait, "available 2 once minReadySeconds pass", func() (bool, string) {
		st := status()
		return st.AvailableReplicas == 2, fmt.Sprintf("%+v", st)
	})
}

// A pod that fails or is being deleted is not a replica: it is replaced,
// and one being deleted counts as terminating (G.2).
func TestInactivePodsReplaced_G2(t *testing.T) {
	s := start(t, replicaset.Descriptor)
	ctx := context.Background()
	if _, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("inactive", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ps := waitPods(t, s.Client, "inactive", 2)
	failed := ps[0]
	failed.Status.Phase = corev1.PodFailed
	if _, err := s.Client.CoreV1().Pods("default").UpdateStatus(ctx, &failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Bound to a node that exists, a pod's deletion waits for its
	// kubelet.
	if _, err := s.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setReady(t, s.Client, ps[1], "n1", time.Now())
	if err := s.Client.CoreV1().Pods("default").Delete(ctx, ps[1].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "replacements", func() (bool, string) {
		cur, err := s.Client.AppsV1().ReplicaSets("default").Get(ctx, "inactive", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		active := 0
		for _, p := range pods(t, s.Client, "inactive") {
			if p.Status.Phase != corev1.PodFailed {
				active++
			}
		}
		st := cur.Status
		return active == 2 && st.Replicas == 2 && st.TerminatingReplicas != nil && *st.TerminatingReplicas == 1,
			fmt.Sprintf("%d active, status %+v", active, st)
	})
}

// A ReplicationController gets its pods the same way, with its own kind
// in their controller reference and no terminatingReplicas (G.2).
func TestReplicationController_G2(t *testing.T) {
	s := start(t, replicaset.RCDescriptor)
	ctx := context.Background()
	two := int32(2)
	l := map[string]string{"app": "legacy"}
	tpl := template(l)
	rc, err := s.Client.CoreV1().ReplicationControllers("default").Create(ctx, &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
		Spec:       corev1.ReplicationControllerSpec{Replicas: &two, Selector: l, Template: &tpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := waitPods(t, s.Client, "legacy", 2)
	for _, p := range got {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rc.UID || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" {
			t.Errorf("pod %s: controller %+v, want the ReplicationController", p.Name, ref)
		}
	}
	setReady(t, s.Client, got[0], "n1", time.Now().Add(-time.Minute))
	testwait.For(t, wait, "status", func() (bool, string) {
		cur, err := s.Client.CoreV1().ReplicationControllers("default").Get(ctx, "legacy", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := cur.Status
		return st.Replicas == 2 && st.FullyLabeledReplicas == 2 && st.ReadyReplicas == 1 && st.AvailableReplicas == 1 &&
			st.ObservedGeneration == 1, fmt.Sprintf("%+v", st)
	})
	waitEvent(t, s.Client, "SuccessfulCreate", "Created pod: "+got[0].Name)
	if _, err := s.Client.CoreV1().ReplicationControllers("default").Patch(ctx, "legacy", types.MergePatchType,
		[]byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	left := waitPods(t, s.Client, "legacy", 1)
	if left[0].Name != got[0].Name {
		t.Errorf("kept %s, want the ready pod %s", left[0].Name, got[0].Name)
	}
}

// A pod the API server refuses is a FailedCreate: an event and the
// ReplicaFailure condition, which goes once pods can be made (G.2).
func TestFailedCreateCondition_G2(t *testing.T) {
	s := start(t, replicaset.Descriptor)
	ctx := context.Background()
	rs := newRS("quota", 1)
	// The server refuses a pod whose service account does not exist.
	rs.Spec.Template.Spec.ServiceAccountName = "robot"
	if _, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "ReplicaFailure", func() (bool, string) {
		cur, err := s.Client.AppsV1().ReplicaSets("default").Get(ctx, "quota", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue && c.Reason == "FailedCreate" &&
				strings.Contains(c.Message, "robot") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", cur.Status.Conditions)
	})
	testwait.For(t, wait, "FailedCreate event", func() (bool, string) {
		evs, err := s.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.Message, "Error creating: ") &&
				e.InvolvedObject.Kind == "ReplicaSet" && e.Source.Component == "replicaset-controller" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
	if _, err := s.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, s.Client, "quota", 1)
	testwait.For(t, wait, "the condition gone", func() (bool, string) {
		cur, err := s.Client.AppsV1().ReplicaSets("default").Get(ctx, "quota", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(cur.Status.Conditions) == 0, fmt.Sprintf("%+v", cur.Status.Conditions)
	})
}

// Between pods alike but for their node, the one whose node holds more
// pods of the ReplicaSets with the same owner goes first, even before one
// that became ready later (G.2).
func TestScaleDownPrefersCrowdedNodes_G2(t *testing.T) {
	s := start(t, replicaset.Descriptor)
	ctx := context.Background()
	l := map[string]string{"app": "fam"}
	one := int32(1)
	d, err := s.Client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "fam"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: l}, Template: template(l)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	owned := func(version string) *appsv1.ReplicaSet {
		rs := newRS("fam-"+version, 2)
		labels := map[string]string{"app": "fam", "v": version}
		rs.Spec.Selector.MatchLabels, rs.Spec.Template.Labels = labels, labels
		rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "fam", UID: d.UID,
			Controller: &yes, BlockOwnerDeletion: &yes}}
		return rs
	}
	for _, v := range []string{"old", "new"} {
		if _, err := s.Client.AppsV1().ReplicaSets("default").Create(ctx, owned(v), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	byVersion := func(v string) []corev1.Pod {
		var out []corev1.Pod
		for _, p := range waitPods(t, s.Client, "fam", 4) {
			if p.Labels["v"] == v {
				out = append(out, p)
			}
		}
		slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	old, cur := byVersion("old"), byVersion("new")
	if len(old) != 2 || len(cur) != 2 {
		t.Fatalf("%d old and %d new pods, want 2 and 2", len(old), len(cur))
	}
	for _, p := range old {
		setReady(t, s.Client, p, "crowded", time.Now().Add(-time.Hour))
	}
	// Alone, the ready times would choose cur[1], ready more recently.
	setReady(t, s.Client, cur[0], "crowded", time.Now().Add(-time.Hour))
	setReady(t, s.Client, cur[1], "empty", time.Now().Add(-time.Minute))
	// The controller ranks pods from its own cache: once both sets report
	// their pods ready, the cache holds their nodes and ready times too.
	for _, name := range []string{"fam-old", "fam-new"} {
		testwait.For(t, wait, name+" reports 2 ready", func() (bool, string) {
			rs, err := s.Client.AppsV1().ReplicaSets("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return rs.Status.ReadyReplicas == 2, fmt.Sprintf("%+v", rs.Status)
		})
	}
	if _, err := s.Client.AppsV1().ReplicaSets("default").Patch(ctx, "fam-new", types.MergePatchType,
		[]byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "one new pod left", func() (bool, string) {
		var left []string
		for _, p := range pods(t, s.Client, "fam") {
			if p.Labels["v"] == "new" {
				left = append(left, p.Name)
			}
		}
		return len(left) == 1 && left[0] == cur[1].Name, fmt.Sprintf("left %v, want [%s]", left, cur[1].Name)
	})
}
