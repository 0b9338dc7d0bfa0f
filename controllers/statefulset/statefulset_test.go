package statefulset_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/statefulset"
	"github.com/kubegate/kubegate/internal/testwait"
)

const ns = "default"

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	s := controllertest.Start(t, statefulset.Descriptor)
	if _, err := s.Client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return s.Client
}

func newSet(name string, n int32, mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &n,
			ServiceName: "svc",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/db:1"}}},
			},
		},
	}
	if mutate != nil {
		mutate(set)
	}
	return set
}

// pods returns the live pods of app by name.
func pods(t *testing.T, c kubernetes.Interface, app string) map[string]corev1.Pod {
	t.Helper()
	list, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

func names(m map[string]corev1.Pod) string {
	var s []string
	for n := range m {
		s = append(s, n)
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// run binds pod name to n1 and makes it Running and Ready.
func run(c kubernetes.Interface, name string) error {
	ctx := context.Background()
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p.Spec.NodeName == "" {
		if err := c.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if p, err = c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

func getSet(t *testing.T, c kubernetes.Interface, name string) *appsv1.StatefulSet {
	t.Helper()
	set, err := c.AppsV1().StatefulSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// waitStatus waits until the set's observed status has replicas and ready.
func waitStatus(t *testing.T, c kubernetes.Interface, name string, replicas, ready int32) *appsv1.StatefulSet {
	t.Helper()
	var set *appsv1.StatefulSet
	testwait.For(t, 30*time.Second, fmt.Sprintf("%s: %d replicas, %d ready", name, replicas, ready), func() (bool, string) {
		set = getSet(t, c, name)
		st := set.Status
		return st.ObservedGeneration == set.Generation && st.Replicas == replicas && st.ReadyReplicas == ready, fmt.Sprintf("%+v", st)
	})
	return set
}

func TestOrderedReadyCreatesOneAtATime_G5(t *testing.T) {
	t.Parallel()
	c := start(t)
	set, err := c.AppsV1().StatefulSets(ns).Create(context.Background(), newSet("web", 3, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		// The controller has seen pod i and not made pod i+1 while pod i
		// is not ready.
		waitStatus(t, c, "web", int32(i+1), int32(i))
		if got, want := names(pods(t, c, "web")), strings.Join([]string{"web-0", "web-1", "web-2"}[:i+1], ","); got != want {
			t.Fatalf("pods %s, want %s", got, want)
		}
		if err := run(c, fmt.Sprintf("web-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	st := waitStatus(t, c, "web", 3, 3).Status
	if st.CurrentRevision == "" || st.CurrentRevision != st.UpdateRevision || st.CurrentReplicas != 3 || st.UpdatedReplicas != 3 || st.AvailableReplicas != 3 {
		t.Errorf("status %+v", st)
	}
	p := pods(t, c, "web")["web-1"]
	want := map[string]string{"app": "web", "statefulset.kubernetes.io/pod-name": "web-1", "apps.kubernetes.io/pod-index": "1",
		"controller-revision-hash": st.UpdateRevision}
	for k, v := range want {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, p.Labels[k], v, p.Labels)
		}
	}
	if p.Spec.Hostname != "web-1" || p.Spec.Subdomain != "svc" {
		t.Errorf("hostname %q subdomain %q", p.Spec.Hostname, p.Spec.Subdomain)
	}
	if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != set.UID {
		t.Errorf("owner %v", p.OwnerReferences)
	}
	rev, err := c.AppsV1().ControllerRevisions(ns).Get(context.Background(), st.UpdateRevision, metav1.GetOptions{})
	if err != nil || rev.Revision != 1 || !strings.HasPrefix(rev.Name, "web-") || rev.Labels["controller.kubernetes.io/hash"] == "" {
		t.Errorf("revision %v, %v", rev, err)
	}

	testwait.For(t, 30*time.Second, "a SuccessfulCreate event for web-2", func() (bool, string) {
		evs, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == "SuccessfulCreate" && e.Message == "Create Pod web-2 in StatefulSet web successful" && e.Source.Component == "statefulset-controller" {
				return true, ""
			}
		}
		return false, strings.Join(seen, "; ")
	})

	// Scaling down removes the highest ordinal first, one at a time.
	set = getSet(t, c, "web")
	one := int32(1)
	set.Spec.Replicas = &one
	if _, err := c.AppsV1().StatefulSets(ns).Update(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "web-2 being deleted, web-1 not", func() (bool, string) {
		list, _ := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		var s []string
		deleting := map[string]bool{}
		for _, p := range list.Items {
			deleting[p.Name] = p.DeletionTimestamp != nil
			s = append(s, fmt.Sprintf("%s:%v", p.Name, p.DeletionTimestamp != nil))
		}
		if deleting["web-1"] {
			t.Fatalf("web-1 deleted before web-2 was gone: %v", s)
		}
		return deleting["web-2"], strings.Join(s, ",")
	})
}

func TestParallelCreatesAllAtOnce_G5(t *testing.T) {
	t.Parallel()
	c := start(t)
	if _, err := c.AppsV1().StatefulSets(ns).Create(context.Background(), newSet("par", 3, func(s *appsv1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, "par", 3, 0)
	if got := names(pods(t, c, "par")); got != "par-0,par-1,par-2" {
		t.Errorf("pods %s", got)
	}
}

func TestRollingUpdateWithPartition_G5(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, newSet("db", 3, func(s *appsv1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A kubelet: every pod of the set comes up Running and Ready, and one
	// being deleted goes at once.
	runAll := func() func() (bool, string) {
		return func() (bool, string) {
			list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range list.Items {
				switch {
				case p.DeletionTimestamp != nil:
					zero := int64(0)
					_ = c.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				case p.Status.Phase != corev1.PodRunning:
					_ = run(c, p.Name) // retried on the next round
				}
			}
			return true, ""
		}
	}
	waitStatus(t, c, "db", 3, 0)
	runAll()()
	first := waitStatus(t, c, "db", 3, 3).Status.UpdateRevision

	set := getSet(t, c, "db")
	one := int32(1)
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: &one}
	set.Spec.Template.Spec.Containers[0].Image = "registry.example/db:2"
	if _, err := c.AppsV1().StatefulSets(ns).Update(ctx, set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var st appsv1.StatefulSetStatus
	testwait.For(t, 30*time.Second, "db-2 and db-1 updated, db-0 not", func() (bool, string) {
		runAll()()
		set := getSet(t, c, "db")
		st = set.Status
		ps := pods(t, c, "db")
		var images []string
		for _, p := range ps {
			images = append(images, p.Name+"="+p.Spec.Containers[0].Image)
		}
		return st.ObservedGeneration == set.Generation && st.UpdatedReplicas == 2 && st.ReadyReplicas == 3 && st.CurrentReplicas == 1, fmt.Sprintf("%+v %v", st, images)
	})
	ps := pods(t, c, "db")
	if st.CurrentRevision != first || st.UpdateRevision == first {
		t.Errorf("current %s update %s, want current %s and a new update revision", st.CurrentRevision, st.UpdateRevision, first)
	}
	for name, img := range map[string]string{"db-0": "registry.example/db:1", "db-1": "registry.example/db:2", "db-2": "registry.example/db:2"} {
		if got := ps[name].Spec.Containers[0].Image; got != img {
			t.Errorf("%s image %s, want %s", name, got, img)
		}
	}

	set = getSet(t, c, "db")
	zero := int32(0)
	set.Spec.UpdateStrategy.RollingUpdate.Partition = &zero
	if _, err := c.AppsV1().StatefulSets(ns).Update(ctx, set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "every pod updated, the update revision current", func() (bool, string) {
		runAll()()
		st := getSet(t, c, "db").Status
		return st.UpdatedReplicas == 3 && st.CurrentReplicas == 3 && st.CurrentRevision == st.UpdateRevision && st.ReadyReplicas == 3, fmt.Sprintf("%+v", st)
	})
	revs, _ := c.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if len(revs.Items) != 2 {
		t.Errorf("%d revisions, want 2", len(revs.Items))
	}
}

// Each pod of a StatefulSet with volumeClaimTemplates gets a claim of
// its own, TEMPLATE-POD, which it mounts under the template's name (G.5).
func TestClaimTemplatesGiveEachPodItsClaim_G5(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, newSet("vol", 2, func(s *appsv1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, "vol", 2, 0)
	for name, p := range pods(t, c, "vol") {
		want, got := "data-"+name, ""
		for _, v := range p.Spec.Volumes {
			if v.Name == "data" && v.PersistentVolumeClaim != nil {
				got = v.PersistentVolumeClaim.ClaimName
			}
		}
		if got != want {
			t.Errorf("pod %s mounts claim %q as data, want %q", name, got, want)
		}
		if _, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, want, metav1.GetOptions{}); err != nil {
			t.Errorf("claim %s of pod %s: %v", want, name, err)
		}
	}
}
