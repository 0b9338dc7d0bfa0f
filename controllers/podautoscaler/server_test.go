package podautoscaler_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/podautoscaler"
	"github.com/kubegate/kubegate/internal/testwait"
)

// usage is a metrics source giving every pod of a selector the same CPU
// usage, which a test changes.
type usage struct {
	mu         sync.Mutex
	millicores int64
	pods       func(ns string, sel labels.Selector) []string
}

func (u *usage) set(m int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.millicores = m
}

func (u *usage) ResourceMetric(_ context.Context, _ corev1.ResourceName, ns string, sel labels.Selector, _ string) (podautoscaler.PodMetrics, time.Time, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := time.Now()
	out := podautoscaler.PodMetrics{}
	for _, name := range u.pods(ns, sel) {
		out[name] = podautoscaler.PodMetric{Timestamp: now, Window: 15 * time.Second, Value: u.millicores}
	}
	return out, now, nil
}

func (u *usage) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (podautoscaler.PodMetrics, time.Time, error) {
	return nil, time.Time{}, fmt.Errorf("no custom metrics")
}

func (u *usage) ObjectMetric(context.Context, string, string, *autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return 0, time.Time{}, fmt.Errorf("no custom metrics")
}

func (u *usage) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, time.Time, error) {
	return nil, time.Time{}, fmt.Errorf("no external metrics")
}

// workload creates Deployment web with replicas, its selector app=web,
// and two running, ready pods of it requesting 100m CPU.
func workload(t *testing.T, c kubernetes.Interface, replicas int32) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	for _, name := range []string{"web-a", "web-b"} {
		p, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}}
		if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func createHPA(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 8,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}}}}
	if _, err := c.AutoscalingV2().HorizontalPodAutoscalers("default").Create(context.Background(), hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func replicas(c kubernetes.Interface) (int32, string) {
	d, err := c.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		return -1, err.Error()
	}
	return *d.Spec.Replicas, fmt.Sprintf("spec.replicas %d", *d.Spec.Replicas)
}

func TestScalesADeploymentThroughItsScale_G19(t *testing.T) {
	t.Parallel()
	src := &usage{millicores: 200}
	settings := controllers.DefaultHPASettings()
	settings.SyncPeriod, settings.DownscaleStabilization = 100*time.Millisecond, 2*time.Second
	var c kubernetes.Interface
	desc := controllers.Descriptor{Name: podautoscaler.Name, New: func(cc *controllers.Context) (controllers.Controller, error) {
		pods := cc.Informers.Core().V1().Pods().Lister()
		src.pods = func(ns string, sel labels.Selector) []string {
			list, _ := pods.Pods(ns).List(sel)
			names := make([]string, len(list))
			for i, p := range list {
				names[i] = p.Name
			}
			return names
		}
		return podautoscaler.NewWith(cc, podautoscaler.Clients{Metrics: src})
	}}
	s := controllertest.StartWith(t, manager.Options{Descriptors: []controllers.Descriptor{desc}, HPA: settings, Logger: slog.New(slog.DiscardHandler)})
	c = s.Client
	workload(t, c, 2)
	createHPA(t, c)
	// Two pods at 200% of a 50% target: up to four, twice the replicas.
	testwait.For(t, 30*time.Second, "scaled up to 4", func() (bool, string) {
		n, seen := replicas(c)
		return n == 4, seen
	})
	testwait.For(t, 30*time.Second, "status written", func() (bool, string) {
		h, err := c.AutoscalingV2().HorizontalPodAutoscalers("default").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		seen := fmt.Sprintf("current %d desired %d lastScaleTime %v conditions %v", h.Status.CurrentReplicas, h.Status.DesiredReplicas, h.Status.LastScaleTime, h.Status.Conditions)
		return h.Status.DesiredReplicas >= 4 && h.Status.LastScaleTime != nil, seen
	})
	testwait.For(t, 30*time.Second, "SuccessfulRescale event", func() (bool, string) {
		return hasEvent(c, "SuccessfulRescale", "New size: 4; reason: cpu resource utilization (percentage of request) above target")
	})
	// Idle: down to the minimum once the 2 s window has passed.
	src.set(5)
	testwait.For(t, 30*time.Second, "scaled down to 1", func() (bool, string) {
		n, seen := replicas(c)
		return n == 1, seen
	})
}

func TestWithoutAResourceMetricsAPI_G19(t *testing.T) {
	t.Parallel()
	settings := controllers.DefaultHPASettings()
	settings.SyncPeriod = 100 * time.Millisecond
	s := controllertest.StartWith(t, manager.Options{Descriptors: []controllers.Descriptor{podautoscaler.Descriptor}, HPA: settings,
		Logger: slog.New(slog.DiscardHandler)})
	c := s.Client
	workload(t, c, 2)
	createHPA(t, c)
	const prefix = "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: "
	testwait.For(t, 30*time.Second, "ScalingActive False", func() (bool, string) {
		h, err := c.AutoscalingV2().HorizontalPodAutoscalers("default").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range h.Status.Conditions {
			if cond.Type == autoscalingv2.ScalingActive {
				ok := cond.Status == corev1.ConditionFalse && cond.Reason == "FailedGetResourceMetric" && strings.HasPrefix(cond.Message, prefix)
				return ok && h.Status.CurrentReplicas == 2, fmt.Sprintf("%s %s %s (currentReplicas %d)", cond.Status, cond.Reason, cond.Message, h.Status.CurrentReplicas)
			}
		}
		return false, fmt.Sprintf("conditions %v", h.Status.Conditions)
	})
	testwait.For(t, 30*time.Second, "FailedComputeMetricsReplicas event", func() (bool, string) {
		return hasEvent(c, "FailedComputeMetricsReplicas", "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: ")
	})
	if n, _ := replicas(c); n != 2 {
		t.Errorf("replicas: got %d, want 2", n)
	}
}

// hasEvent reports whether the autoscaler web has an event of reason
// whose message starts with message.
func hasEvent(c kubernetes.Interface, reason, message string) (bool, string) {
	list, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	var seen []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "HorizontalPodAutoscaler" || e.InvolvedObject.Name != "web" {
			continue
		}
		if e.Reason == reason && strings.HasPrefix(e.Message, message) && e.Source.Component == "horizontal-pod-autoscaler" {
			return true, ""
		}
		seen = append(seen, e.Reason+": "+e.Message)
	}
	return false, strings.Join(seen, "; ")
}
