package daemonset_test

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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/daemonset"
	"github.com/kubegate/kubegate/internal/testwait"
)

const ns = "default"

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	return controllertest.Start(t, daemonset.Descriptor).Client
}

func createNode(t *testing.T, c kubernetes.Interface, name string, labels map[string]string, taints ...corev1.Taint) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A new node is tainted not-ready until it is ready; these nodes are
	// ready at once and carry only the taints given.
	n.Spec.Taints = taints
	if _, err := c.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func newDS(name string, mutate func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/agent:1"}}},
			},
		},
	}
	if mutate != nil {
		mutate(ds)
	}
	return ds
}

// podsByNode lists the live pods of app by the node their affinity names.
func podsByNode(t *testing.T, c kubernetes.Interface, app string) map[string][]corev1.Pod {
	t.Helper()
	list, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		node := p.Spec.NodeName
		if a := p.Spec.Affinity; node == "" && a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			node = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
		}
		out[node] = append(out[node], p)
	}
	return out
}

func nodeSet(m map[string][]corev1.Pod) string {
	var names []string
	for n, pods := range m {
		names = append(names, fmt.Sprintf("%s:%d", n, len(pods)))
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func TestOnePodPerEligibleNode_G4(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	ssd := map[string]string{"disk": "ssd"}
	createNode(t, c, "n1", ssd)
	createNode(t, c, "n2", nil) // not selected
	createNode(t, c, "n3", ssd, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
	// Daemon pods tolerate an unschedulable node and a not-ready one.
	createNode(t, c, "n4", ssd, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
	ds, err := c.AppsV1().DaemonSets(ns).Create(ctx, newDS("agent", func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.NodeSelector = ssd
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "a pod on n1 and n4", func() (bool, string) {
		s := nodeSet(podsByNode(t, c, "agent"))
		return s == "n1:1,n4:1", s
	})
	revs, err := c.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 1 {
		t.Fatalf("revisions: %v %v", revs, err)
	}
	rev := revs.Items[0]
	hash := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if rev.Name != "agent-"+hash || rev.Revision != 1 || metav1.GetControllerOf(&rev) == nil || metav1.GetControllerOf(&rev).UID != ds.UID {
		t.Errorf("revision %s (revision %d, owners %v), want agent-%s, 1, controlled by the DaemonSet", rev.Name, rev.Revision, rev.OwnerReferences, hash)
	}
	if !strings.Contains(string(rev.Data.Raw), `"$patch":"replace"`) {
		t.Errorf("revision data %s is not a template replacement", rev.Data.Raw)
	}
	pod := podsByNode(t, c, "agent")["n1"][0]
	if !strings.HasPrefix(pod.Name, "agent-") || pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash || pod.Labels["pod-template-generation"] != "1" {
		t.Errorf("pod %s labels %v, want agent-*, hash %s, generation 1", pod.Name, pod.Labels, hash)
	}
	if ref := metav1.GetControllerOf(&pod); ref == nil || ref.UID != ds.UID || ref.Kind != "DaemonSet" {
		t.Errorf("pod owner %v", pod.OwnerReferences)
	}
	var tols []string
	for _, tol := range pod.Spec.Tolerations {
		tols = append(tols, tol.Key+":"+string(tol.Effect))
	}
	want := []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/disk-pressure:NoSchedule",
		"node.kubernetes.io/memory-pressure:NoSchedule", "node.kubernetes.io/pid-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"}
	if !slices.Equal(tols, want) {
		t.Errorf("tolerations %v, want %v", tols, want)
	}
	testwait.For(t, 30*time.Second, "status desired 2, current 2", func() (bool, string) {
		got, err := c.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := got.Status
		return st.DesiredNumberScheduled == 2 && st.CurrentNumberScheduled == 2 && st.NumberUnavailable == 2 &&
			st.UpdatedNumberScheduled == 2 && st.ObservedGeneration == got.Generation, fmt.Sprintf("%+v", st)
	})

	testwait.For(t, 30*time.Second, "a SuccessfulCreate event for n1's pod", func() (bool, string) {
		evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=agent"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == "SuccessfulCreate" && e.Message == "Created pod: "+pod.Name && e.Source.Component == "daemonset-controller" &&
				e.InvolvedObject.Kind == "DaemonSet" {
				return true, ""
			}
		}
		return false, strings.Join(seen, "; ")
	})

	// A node that comes gets a pod; one that goes loses its pod; a node
	// no longer selected has its pod deleted.
	createNode(t, c, "n5", ssd)
	if err := c.CoreV1().Nodes().Delete(ctx, "n4", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n1, _ := c.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	n1.Labels = nil
	if _, err := c.CoreV1().Nodes().Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "a pod on n5 only", func() (bool, string) {
		s := nodeSet(podsByNode(t, c, "agent"))
		return s == "n5:1", s
	})
}

// kubelet binds every pending pod to the node its affinity names and
// makes it Running and Ready, until the test ends.
func kubelet(t *testing.T, c kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range list.Items {
					if p.DeletionTimestamp != nil {
						// No finalizers: a graceful deletion ends at once.
						zero := int64(0)
						_ = c.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
						continue
					}
					if p.Spec.NodeName == "" {
						node := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
						_ = c.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
							Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
						continue
					}
					if p.Status.Phase != corev1.PodRunning {
						p.Status.Phase = corev1.PodRunning
						p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
						_, _ = c.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

func TestRollingUpdateHonoursMaxUnavailable_G4(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	for i := range 4 {
		createNode(t, c, fmt.Sprintf("n%d", i), nil)
	}
	kubelet(t, c)
	two := intstr.FromInt32(2)
	if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, newDS("web", func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &two}}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	available := func(want int32) func() (bool, string) {
		return func() (bool, string) {
			ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			st := ds.Status
			return st.NumberAvailable == 4 && st.UpdatedNumberScheduled == want && st.ObservedGeneration == ds.Generation, fmt.Sprintf("%+v", st)
		}
	}
	testwait.For(t, 30*time.Second, "4 pods available", available(4))
	setImage(t, c, "web", "registry.example/agent:2")
	// Sample while the update runs: never more than 2 of 4 nodes without
	// a pod that is ready.
	minReady := 4
	testwait.For(t, 60*time.Second, "4 updated pods available", func() (bool, string) {
		readyNodes := 0
		for _, pods := range podsByNode(t, c, "web") {
			for _, p := range pods {
				if p.Status.Phase == corev1.PodRunning {
					readyNodes++
					break
				}
			}
		}
		minReady = min(minReady, readyNodes)
		return available(4)()
	})
	if minReady < 2 {
		t.Errorf("at one point only %d of 4 nodes had a ready pod; maxUnavailable is 2", minReady)
	}
	revs, _ := c.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	var numbers []int64
	for _, r := range revs.Items {
		numbers = append(numbers, r.Revision)
	}
	slices.Sort(numbers)
	if !slices.Equal(numbers, []int64{1, 2}) {
		t.Errorf("revisions %v, want 1 and 2", numbers)
	}
	for node, pods := range podsByNode(t, c, "web") {
		if len(pods) != 1 || pods[0].Spec.Containers[0].Image != "registry.example/agent:2" || pods[0].Labels["pod-template-generation"] != "2" {
			t.Errorf("node %s: pods %v", node, pods)
		}
	}
}

func TestOnDeleteReplacesOnlyDeletedPods_G4(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	createNode(t, c, "n1", nil)
	createNode(t, c, "n2", nil)
	kubelet(t, c)
	if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, newDS("od", func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "2 running pods", func() (bool, string) {
		m := podsByNode(t, c, "od")
		return len(m["n1"]) == 1 && len(m["n2"]) == 1 && m["n1"][0].Status.Phase == corev1.PodRunning && m["n2"][0].Status.Phase == corev1.PodRunning, nodeSet(m)
	})
	setImage(t, c, "od", "registry.example/agent:2")
	testwait.For(t, 30*time.Second, "status updated 0 of 2 at generation 2", func() (bool, string) {
		ds, _ := c.AppsV1().DaemonSets(ns).Get(ctx, "od", metav1.GetOptions{})
		return ds.Status.ObservedGeneration == 2 && ds.Status.UpdatedNumberScheduled == 0 && ds.Status.NumberAvailable == 2, fmt.Sprintf("%+v", ds.Status)
	})
	old := podsByNode(t, c, "od")["n1"][0]
	if err := c.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "n1's pod replaced by the new template, n2's kept", func() (bool, string) {
		m := podsByNode(t, c, "od")
		ok := len(m["n1"]) == 1 && m["n1"][0].Spec.Containers[0].Image == "registry.example/agent:2" &&
			len(m["n2"]) == 1 && m["n2"][0].Spec.Containers[0].Image == "registry.example/agent:1"
		return ok, nodeSet(m)
	})
}

func TestRollingUpdateWithSurgeKeepsEveryNodeServed_G4(t *testing.T) {
	t.Parallel()
	c := start(t)
	ctx := context.Background()
	for i := range 3 {
		createNode(t, c, fmt.Sprintf("n%d", i), nil)
	}
	kubelet(t, c)
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, newDS("surge", func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &zero, MaxSurge: &one}}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := func() (bool, string) {
		ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, "surge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := ds.Status
		return st.NumberAvailable == 3 && st.UpdatedNumberScheduled == 3 && st.ObservedGeneration == ds.Generation, fmt.Sprintf("%+v", st)
	}
	testwait.For(t, 30*time.Second, "3 pods available", done)
	setImage(t, c, "surge", "registry.example/agent:2")
	// Sample while the update runs: every node keeps a Running pod, and
	// none has more than two.
	served, most := 3, 0
	testwait.For(t, 60*time.Second, "3 updated pods available", func() (bool, string) {
		m := podsByNode(t, c, "surge")
		running := 0
		for _, pods := range m {
			most = max(most, len(pods))
			for _, p := range pods {
				if p.Status.Phase == corev1.PodRunning {
					running++
					break
				}
			}
		}
		served = min(served, running)
		ok, seen := done()
		return ok && len(m) == 3, seen
	})
	if served < 3 || most > 2 {
		t.Errorf("during the update: as few as %d of 3 nodes had a running pod, and a node had up to %d pods; want 3 and at most 2", served, most)
	}
	for node, pods := range podsByNode(t, c, "surge") {
		if len(pods) != 1 || pods[0].Spec.Containers[0].Image != "registry.example/agent:2" {
			t.Errorf("node %s: %d pods after the update", node, len(pods))
		}
	}
}

// setImage changes the DaemonSet's image, reading it again when the
// controller's status write got in first.
func setImage(t *testing.T, c kubernetes.Interface, name, image string) {
	t.Helper()
	ctx := context.Background()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds.Spec.Template.Spec.Containers[0].Image = image
		_, err = c.AppsV1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
