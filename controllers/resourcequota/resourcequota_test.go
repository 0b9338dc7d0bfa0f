package resourcequota_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/resourcequota"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

func start(t *testing.T, o resourcequota.Options) kubernetes.Interface {
	t.Helper()
	d := controllers.Descriptor{Name: resourcequota.Descriptor.Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return resourcequota.New(c, o)
	}}
	return controllertest.StartWith(t, manager.Options{Descriptors: []controllers.Descriptor{d}, Logger: slog.New(slog.DiscardHandler)}).Client
}

func namespace(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createQuota(t *testing.T, c kubernetes.Interface, ns, name string, spec corev1.ResourceQuotaSpec) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if _, err := c.CoreV1().ResourceQuotas(ns).Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitUsed waits until quota ns/name's status holds spec.hard and used
// is want, resource by resource.
func waitUsed(t *testing.T, c kubernetes.Interface, ns, name string, want map[corev1.ResourceName]string) {
	t.Helper()
	testwait.For(t, wait, fmt.Sprintf("quota %s/%s used %v", ns, name, want), func() (bool, string) {
		q, err := c.CoreV1().ResourceQuotas(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(q.Status.Hard) != len(q.Spec.Hard) || len(q.Status.Used) != len(want) {
			return false, fmt.Sprintf("status hard %v used %v", q.Status.Hard, q.Status.Used)
		}
		for n, h := range q.Spec.Hard {
			if got := q.Status.Hard[n]; got.Cmp(h) != 0 {
				return false, fmt.Sprintf("status hard %v", q.Status.Hard)
			}
		}
		for n, w := range want {
			got, ok := q.Status.Used[n]
			if !ok || got.Cmp(resource.MustParse(w)) != 0 {
				return false, fmt.Sprintf("used %v", q.Status.Used)
			}
		}
		return true, ""
	})
}

func pod(name string, cpu string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if cpu != "" {
		r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: r, Limits: r}
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func createPod(t *testing.T, c kubernetes.Interface, ns string, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The controller fills a new quota's status, counts the pods and their
// requests as they come, stops charging the resources of a pod that
// finished, and counts a deleted pod no more.
func TestQuotaUsageCountsPods_G21(t *testing.T) {
	t.Parallel()
	c := start(t, resourcequota.Options{})
	ctx := context.Background()
	namespace(t, c, "q1")
	createQuota(t, c, "q1", "compute", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("5"), corev1.ResourceRequestsCPU: resource.MustParse("2"),
		"count/pods": resource.MustParse("5"), corev1.ResourceConfigMaps: resource.MustParse("3")}})
	waitUsed(t, c, "q1", "compute", map[corev1.ResourceName]string{"pods": "0", "requests.cpu": "0", "count/pods": "0", "configmaps": "0"})

	createPod(t, c, "q1", pod("a", "500m"))
	p := createPod(t, c, "q1", pod("b", "250m"))
	if _, err := c.CoreV1().ConfigMaps("q1").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "q1", "compute", map[corev1.ResourceName]string{"pods": "2", "requests.cpu": "750m", "count/pods": "2", "configmaps": "1"})

	// A finished pod still counts as an object, not as a pod's resources.
	p.Status.Phase = corev1.PodSucceeded
	if _, err := c.CoreV1().Pods("q1").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "q1", "compute", map[corev1.ResourceName]string{"pods": "1", "requests.cpu": "500m", "count/pods": "2", "configmaps": "1"})

	if err := c.CoreV1().Pods("q1").Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ConfigMaps("q1").Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "q1", "compute", map[corev1.ResourceName]string{"pods": "1", "requests.cpu": "500m", "count/pods": "1", "configmaps": "0"})

	// A changed spec.hard is taken into the status, and a resource no
	// longer named leaves it.
	q, err := c.CoreV1().ResourceQuotas("q1").Get(ctx, "compute", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("9"), corev1.ResourceLimitsCPU: resource.MustParse("4")}
	if _, err := c.CoreV1().ResourceQuotas("q1").Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "q1", "compute", map[corev1.ResourceName]string{"pods": "1", "limits.cpu": "500m"})
}

// Each quota counts only the pods in its scopes: BestEffort and
// NotBestEffort, Terminating and NotTerminating, and a PriorityClass
// scope selector.
func TestQuotaScopes_G21(t *testing.T) {
	t.Parallel()
	c := start(t, resourcequota.Options{})
	ctx := context.Background()
	namespace(t, c, "q2")
	if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "q2-high"}, Value: 1000},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
	for name, spec := range map[string]corev1.ResourceQuotaSpec{
		"besteffort":     {Hard: pods, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
		"notbesteffort":  {Hard: pods, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}},
		"terminating":    {Hard: pods, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}},
		"notterminating": {Hard: pods, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}},
		"high": {Hard: pods, ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"q2-high"}}}}},
	} {
		createQuota(t, c, "q2", name, spec)
		waitUsed(t, c, "q2", name, map[corev1.ResourceName]string{"pods": "0"})
	}
	createPod(t, c, "q2", pod("be", ""))
	createPod(t, c, "q2", pod("burst", "100m"))
	createPod(t, c, "q2", pod("deadline", "", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }))
	createPod(t, c, "q2", pod("prio", "", func(p *corev1.Pod) { p.Spec.PriorityClassName = "q2-high" }))
	for name, want := range map[string]string{"besteffort": "3", "notbesteffort": "1", "terminating": "1", "notterminating": "3", "high": "1"} {
		waitUsed(t, c, "q2", name, map[corev1.ResourceName]string{"pods": want})
	}
}

// A count/RESOURCE.GROUP of a resource without an evaluator of its own
// is counted through a watch on it started for the quota.
func TestQuotaCountsAnyResource_G21(t *testing.T) {
	t.Parallel()
	c := start(t, resourcequota.Options{})
	ctx := context.Background()
	namespace(t, c, "q3")
	createQuota(t, c, "q3", "objects", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("2")}})
	waitUsed(t, c, "q3", "objects", map[corev1.ResourceName]string{"count/deployments.apps": "0"})
	labels := map[string]string{"app": "d"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod("x", "").Spec}}}
	if _, err := c.AppsV1().Deployments("q3").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "q3", "objects", map[corev1.ResourceName]string{"count/deployments.apps": "1"})
	if err := c.AppsV1().Deployments("q3").Delete(ctx, "d", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "q3", "objects", map[corev1.ResourceName]string{"count/deployments.apps": "0"})
}

// A status.used written wrong by another client, which no event of a
// counted object corrects, is set right by the full resync.
func TestQuotaResyncCorrectsUsage_G21(t *testing.T) {
	t.Parallel()
	c := start(t, resourcequota.Options{ResyncPeriod: 200 * time.Millisecond})
	ctx := context.Background()
	namespace(t, c, "q4")
	createQuota(t, c, "q4", "q", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("4")}})
	waitUsed(t, c, "q4", "q", map[corev1.ResourceName]string{"pods": "0"})
	createPod(t, c, "q4", pod("a", ""))
	waitUsed(t, c, "q4", "q", map[corev1.ResourceName]string{"pods": "1"})
	q, err := c.CoreV1().ResourceQuotas("q4").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status.Used[corev1.ResourcePods] = resource.MustParse("3")
	if _, err := c.CoreV1().ResourceQuotas("q4").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c, "q4", "q", map[corev1.ResourceName]string{"pods": "1"})
}
