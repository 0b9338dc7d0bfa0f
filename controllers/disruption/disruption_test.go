package disruption_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/disruption"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testwait"
)

const ns = "default"

// start runs the API server and the disruption controller, with now as
// the controller's clock (nil: the real one).
func start(t *testing.T, now func() time.Time) kubernetes.Interface {
	t.Helper()
	return controllertest.StartWith(t, manager.Options{Descriptors: []controllers.Descriptor{disruption.Descriptor}, Now: now}).Client
}

// pod creates a pod labelled app=web, owned by owner when it is not nil,
// and makes it Running, and Ready when ready is set.
func pod(t *testing.T, cs kubernetes.Interface, name string, ready bool, owner *metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	return appPod(t, cs, "web", name, ready, owner)
}

// appPod is pod with the label app=app.
func appPod(t *testing.T, cs kubernetes.Interface, app, name string, ready bool, owner *metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return setReady(t, cs, p, ready)
}

func setReady(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, ready bool) *corev1.Pod {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	p, err := cs.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func budget(t *testing.T, cs kubernetes.Interface, name string, minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MinAvailable: minAvailable, MaxUnavailable: maxUnavailable}}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), pdb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pdb
}

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// summary is the part of a budget's status the tests compare.
func summary(p *policyv1.PodDisruptionBudget) string {
	s := fmt.Sprintf("gen=%d/%d expected=%d desired=%d healthy=%d allowed=%d", p.Status.ObservedGeneration, p.Generation,
		p.Status.ExpectedPods, p.Status.DesiredHealthy, p.Status.CurrentHealthy, p.Status.DisruptionsAllowed)
	if n := len(p.Status.DisruptedPods); n > 0 {
		s += fmt.Sprintf(" disrupted=%d", n)
	}
	if c := apimeta.FindStatusCondition(p.Status.Conditions, policyv1.DisruptionAllowedCondition); c != nil {
		s += fmt.Sprintf(" %s=%s/%s", c.Type, c.Status, c.Reason)
		if c.Message != "" {
			s += ": " + c.Message
		}
	}
	return s
}

// waitStatus waits until the budget's summary is want.
func waitStatus(t *testing.T, cs kubernetes.Interface, name, want string) *policyv1.PodDisruptionBudget {
	t.Helper()
	var got *policyv1.PodDisruptionBudget
	testwait.For(t, 30*time.Second, "budget "+name+": "+want, func() (bool, string) {
		p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = p
		return summary(p) == want, summary(p)
	})
	return got
}

// With an integer minAvailable the selected pods are the expected ones;
// only ready pods count as healthy (G.12).
func TestIntegerMinAvailableCountsPods_G12(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)
	for i := range 3 {
		pod(t, cs, fmt.Sprintf("web-%d", i), true, nil)
	}
	budget(t, cs, "web", ptr(intstr.FromInt32(2)), nil)
	waitStatus(t, cs, "web", "gen=1/1 expected=3 desired=2 healthy=3 allowed=1 DisruptionAllowed=True/SufficientPods")

	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(t, cs, p, false)
	waitStatus(t, cs, "web", "gen=1/1 expected=3 desired=2 healthy=2 allowed=0 DisruptionAllowed=False/InsufficientPods")

	// A change of the spec moves the generation, which the status follows.
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MinAvailable = ptr(intstr.FromInt32(1))
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Update(context.Background(), pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, cs, "web", "gen=2/2 expected=3 desired=1 healthy=2 allowed=1 DisruptionAllowed=True/SufficientPods")
}

// A percentage or maxUnavailable counts the scale of the pods'
// controllers: a ReplicaSet's replicas, or, for a ReplicaSet a Deployment
// controls, the Deployment's; both round up (G.12).
func TestExpectedPodsFromControllersScale_G12(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)
	ctx := context.Background()
	yes := true
	four, five, two := int32(4), int32(5), int32(2)
	template := func(app string) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	}
	// A ReplicaSet of 4 with three ready pods.
	sel, tmpl := template("web")
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &four, Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}
	for _, name := range []string{"web-a", "web-b", "web-c"} {
		pod(t, cs, name, true, ref)
	}

	// A Deployment of 5 whose ReplicaSet of 2 has two ready pods.
	sel, tmpl = template("api")
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: appsv1.DeploymentSpec{Replicas: &five, Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apiRS, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "api-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &two, Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apiRef := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: apiRS.Name, UID: apiRS.UID, Controller: &yes}
	appPod(t, cs, "api", "api-a", true, apiRef)
	appPod(t, cs, "api", "api-b", true, apiRef)

	// The controller watches pods and budgets, not workloads, as kube's
	// does: the budgets are made once the workloads are in place.
	budget(t, cs, "web", nil, ptr(intstr.FromString("50%")))
	waitStatus(t, cs, "web", "gen=1/1 expected=4 desired=2 healthy=3 allowed=1 DisruptionAllowed=True/SufficientPods")
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "api"}, Spec: policyv1.PodDisruptionBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}, MinAvailable: ptr(intstr.FromString("50%"))}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, cs, "api", "gen=1/1 expected=5 desired=3 healthy=2 allowed=0 DisruptionAllowed=False/InsufficientPods")
}

// A pod whose controller has no scale leaves the budget allowing no
// disruption, with the error in a SyncFailed condition (G.12).
func TestControllerWithoutScaleFailsSafe_G12(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)
	ctx := context.Background()
	ds, err := cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	pod(t, cs, "agent-a", true, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes})
	budget(t, cs, "agent", nil, ptr(intstr.FromInt32(1)))
	waitStatus(t, cs, "agent", "gen=0/1 expected=0 desired=0 healthy=0 allowed=0 DisruptionAllowed=False/SyncFailed: daemonsets.apps does not implement the scale subresource")

	// A pod whose ReplicaSet does not exist has no controller to count.
	pod(t, cs, "orphan", true, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gone", UID: "0000", Controller: &yes})
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "agent-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, cs, "agent", `gen=0/1 expected=0 desired=0 healthy=0 allowed=0 DisruptionAllowed=False/SyncFailed: found no controllers for pod "orphan"`)
}

// An eviction's entry in disruptedPods keeps its pod out of the healthy
// count for two minutes, then is dropped (G.12).
func TestDisruptedPodsExpire_G12(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	cs := start(t, clock.Now)
	ctx := context.Background()
	for i := range 3 {
		pod(t, cs, fmt.Sprintf("web-%d", i), true, nil)
	}
	budget(t, cs, "web", ptr(intstr.FromInt32(1)), nil)
	pdb := waitStatus(t, cs, "web", "gen=1/1 expected=3 desired=1 healthy=3 allowed=2 DisruptionAllowed=True/SufficientPods")

	// As an eviction records it: web-0 counts as disrupted.
	pdb.Status.DisruptedPods = map[string]metav1.Time{"web-0": metav1.NewTime(clock.Now().Add(-time.Minute))}
	pdb.Status.DisruptionsAllowed = 1
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, cs, "web", "gen=1/1 expected=3 desired=1 healthy=2 allowed=1 disrupted=1 DisruptionAllowed=True/SufficientPods")

	// Two minutes after the eviction, with the pod still there, it counts
	// again.
	clock.Add(90 * time.Second)
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(t, cs, p, false) // a change that brings the budget back
	waitStatus(t, cs, "web", "gen=1/1 expected=3 desired=1 healthy=2 allowed=1 DisruptionAllowed=True/SufficientPods")
	testwait.For(t, 30*time.Second, "a NotDeleted event for web-0", func() (bool, string) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web-0"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "NotDeleted" {
				return e.Type == corev1.EventTypeWarning && e.Message == "Pod was expected by PDB default/default to be deleted but it wasn't", e.Message
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// A pod left with the eviction's DisruptionTarget condition for two
// minutes, not deleted, gets the condition set to False (G.12).
func TestStaleDisruptionTargetIsCleared_G12(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	cs := start(t, clock.Now)
	ctx := context.Background()
	p := pod(t, cs, "web-0", true, nil)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(clock.Now().Add(-3 * time.Minute))})
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "DisruptionTarget False", func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget {
				return c.Status == corev1.ConditionFalse && c.Reason == "", fmt.Sprintf("%+v", c)
			}
		}
		return false, "no DisruptionTarget condition"
	})
}

// Pods without a controller cannot be counted by scale: under
// maxUnavailable none is expected, so none may be disrupted, and the
// budget gets kube's UnmanagedPods warning (G.12).
func TestUnmanagedPodsNeedIntegerMinAvailable_G12(t *testing.T) {
	t.Parallel()
	cs := start(t, nil)
	ctx := context.Background()
	pod(t, cs, "web-0", true, nil)
	pod(t, cs, "web-1", true, nil)
	budget(t, cs, "web", nil, ptr(intstr.FromInt32(1)))
	waitStatus(t, cs, "web", "gen=1/1 expected=0 desired=0 healthy=2 allowed=0 DisruptionAllowed=False/InsufficientPods")
	testwait.For(t, 30*time.Second, "an UnmanagedPods event", func() (bool, string) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,involvedObject.kind=PodDisruptionBudget"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "UnmanagedPods" {
				return e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, `set ".spec.minAvailable" field of the PDB to an integer value`), e.Message
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
}
