package podautoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/record"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/controllers"
)

// clock is a settable time that moves on a millisecond each time it is
// read, as time does between two reads in a sync.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// scales is a scale subresource of Deployments held in memory.
type scales struct {
	mu       sync.Mutex
	replicas map[string]int32
	selector string
}

func (s *scales) Scales(namespace string) scale.ScaleInterface { return scaleNS{s, namespace} }

type scaleNS struct {
	s  *scales
	ns string
}

func (n scaleNS) Get(_ context.Context, gr schema.GroupResource, name string, _ metav1.GetOptions) (*autoscalingv1.Scale, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	r, ok := n.s.replicas[name]
	if !ok || gr.Resource != "deployments" {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: n.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: r},
		Status: autoscalingv1.ScaleStatus{Replicas: r, Selector: n.s.selector}}, nil
}

func (n scaleNS) Update(_ context.Context, gr schema.GroupResource, sc *autoscalingv1.Scale, _ metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	if _, ok := n.s.replicas[sc.Name]; !ok {
		return nil, apierrors.NewNotFound(gr, sc.Name)
	}
	n.s.replicas[sc.Name] = sc.Spec.Replicas
	return sc, nil
}

func (n scaleNS) Patch(context.Context, schema.GroupVersionResource, string, types.PatchType, []byte, metav1.PatchOptions) (*autoscalingv1.Scale, error) {
	return nil, fmt.Errorf("patch is not used")
}

func (s *scales) get(name string) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replicas[name]
}

func (s *scales) set(name string, n int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replicas[name] = n
}

// rig is one controller on fake clients, synced by hand.
type rig struct {
	t       *testing.T
	hc      *Controller
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	scales  *scales
	clock   *clock
	events  *record.FakeRecorder
	metrics *metricsfake.Clientset
}

func newRig(t *testing.T, settings controllers.HPASettings, hpa *autoscalingv2.HorizontalPodAutoscaler, replicas int32) *rig {
	t.Helper()
	r := &rig{t: t, client: fake.NewClientset(hpa), scales: &scales{replicas: map[string]int32{"web": replicas}, selector: "app=web"},
		clock: &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}, events: record.NewFakeRecorder(100), metrics: metricsfake.NewSimpleClientset()}
	r.factory = informers.NewSharedInformerFactory(r.client, 0)
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	hc, err := NewWith(&controllers.Context{Client: r.client, Informers: r.factory, Now: r.clock.now, HPA: settings, Logger: slog.New(slog.DiscardHandler)},
		Clients{Scales: r.scales, Mapper: mapper, Metrics: &RESTMetrics{Resource: r.metrics.MetricsV1beta1()}})
	if err != nil {
		t.Fatal(err)
	}
	hc.recorder = r.events
	r.hc = hc
	r.cache(hpa)
	return r
}

// cache puts obj in the informers' caches, as a watch would.
func (r *rig) cache(obj any) {
	r.t.Helper()
	var err error
	switch o := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		inf := r.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer()
		if _, ok, _ := inf.GetIndexer().Get(o); ok {
			err = inf.GetIndexer().Update(o)
		} else {
			err = inf.GetIndexer().Add(o)
			r.hc.added(o)
		}
	case *corev1.Pod:
		err = r.factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

// pod adds a running, ready pod of web requesting 100m CPU, started an
// hour ago, and its metrics using usage millicores.
func (r *rig) pod(name string, usage int64) *corev1.Pod {
	r.t.Helper()
	started := metav1.NewTime(r.clock.now().Add(-time.Hour))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}}}
	r.cache(p)
	r.usage(name, usage)
	return p
}

// usage sets a pod's CPU usage in the metrics API.
func (r *rig) usage(name string, millicores int64) {
	r.t.Helper()
	pm := &metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Timestamp: metav1.NewTime(r.clock.now()), Window: metav1.Duration{Duration: 30 * time.Second},
		Containers: []metricsv1beta1.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewMilliQuantity(millicores, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("32Mi")}}}}
	gvr := metricsv1beta1.SchemeGroupVersion.WithResource("pods")
	tracker := r.metrics.Tracker()
	if _, err := tracker.Get(gvr, "default", name); err == nil {
		if err := tracker.Update(gvr, pm, "default"); err != nil {
			r.t.Fatal(err)
		}
		return
	}
	if err := tracker.Create(gvr, pm, "default"); err != nil {
		r.t.Fatal(err)
	}
}

// sync runs one sync of the autoscaler and caches its written status.
func (r *rig) sync() (*autoscalingv2.HorizontalPodAutoscaler, error) {
	r.t.Helper()
	_, err := r.hc.reconcileKey(context.Background(), "default/web")
	hpa, gerr := r.client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(context.Background(), "web", metav1.GetOptions{})
	if gerr != nil {
		r.t.Fatal(gerr)
	}
	r.cache(hpa)
	return hpa, err
}

// drain is the events recorded so far.
func (r *rig) drain() []string {
	var out []string
	for {
		select {
		case e := <-r.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func cpuHPA(min, max, target int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(min), MaxReplicas: max,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)}}}}}}
}

func condition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	for _, c := range hpa.Status.Conditions {
		if c.Type == t {
			return fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
		}
	}
	return "none"
}

func wantCondition(t *testing.T, hpa *autoscalingv2.HorizontalPodAutoscaler, ct autoscalingv2.HorizontalPodAutoscalerConditionType, want string) {
	t.Helper()
	if got := condition(hpa, ct); got != want {
		t.Errorf("condition %s:\n got %q\nwant %q", ct, got, want)
	}
}

func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
}

func TestScaleUpOnHighUsage_G19(t *testing.T) {
	t.Parallel()
	r := newRig(t, controllers.HPASettings{}, cpuHPA(1, 10, 50), 2)
	r.pod("web-a", 200)
	r.pod("web-b", 200)
	before := r.clock.now()
	hpa, err := r.sync()
	if err != nil {
		t.Fatal(err)
	}
	after := r.clock.now()
	// 400% of the requests against 50% asks for 16; without a behavior a
	// scale-up goes to twice the replicas or four at most.
	if got := r.scales.get("web"); got != 4 {
		t.Errorf("replicas: got %d, want 4", got)
	}
	wantEvents(t, r.drain(), "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target")
	wantCondition(t, hpa, autoscalingv2.AbleToScale, "True SucceededRescale the HPA controller was able to update the target scale to 4")
	wantCondition(t, hpa, autoscalingv2.ScalingActive, "True ValidMetricFound the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)")
	wantCondition(t, hpa, autoscalingv2.ScalingLimited, "True ScaleUpLimit the desired replica count is increasing faster than the maximum scale rate")
	st := hpa.Status
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 4 || st.LastScaleTime == nil || st.LastScaleTime.Time.Before(before.Truncate(time.Second)) || st.LastScaleTime.Time.After(after) {
		t.Errorf("status: got current %d desired %d lastScaleTime %v, want 2, 4, between %v and %v", st.CurrentReplicas, st.DesiredReplicas, st.LastScaleTime, before, after)
	}
	if len(st.CurrentMetrics) != 1 || st.CurrentMetrics[0].Resource == nil || *st.CurrentMetrics[0].Resource.Current.AverageUtilization != 200 ||
		st.CurrentMetrics[0].Resource.Current.AverageValue.String() != "200m" {
		t.Errorf("currentMetrics: got %+v, want cpu at 200%% (200m)", st.CurrentMetrics)
	}
	if st.ObservedGeneration == nil || *st.ObservedGeneration != 1 {
		t.Errorf("observedGeneration: got %v, want 1", st.ObservedGeneration)
	}
}

func TestToleranceBand_G19(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		tolerance float64
		usage     int64
		want      int32
	}{
		{"within the default 10%", 0.1, 54, 2},
		{"below the band", 0.1, 44, 2}, // 0.88: fewer replicas, held by the stabilization window
		{"above the default 10%", 0.1, 56, 3},
		{"within a wider tolerance", 0.2, 56, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := controllers.DefaultHPASettings()
			s.Tolerance = tc.tolerance
			r := newRig(t, s, cpuHPA(1, 10, 50), 2)
			r.pod("web-a", tc.usage)
			r.pod("web-b", tc.usage)
			if _, err := r.sync(); err != nil {
				t.Fatal(err)
			}
			if got := r.scales.get("web"); got != tc.want {
				t.Errorf("replicas: got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestScaleDownOnlyAfterStabilizationWindow_G19(t *testing.T) {
	t.Parallel()
	s := controllers.DefaultHPASettings()
	s.DownscaleStabilization = 30 * time.Second
	r := newRig(t, s, cpuHPA(1, 10, 50), 4)
	for _, name := range []string{"web-a", "web-b", "web-c", "web-d"} {
		r.pod(name, 20)
	}
	hpa, err := r.sync()
	if err != nil {
		t.Fatal(err)
	}
	if got := r.scales.get("web"); got != 4 {
		t.Fatalf("replicas at once: got %d, want 4 (held for the window)", got)
	}
	wantCondition(t, hpa, autoscalingv2.AbleToScale, "True ScaleDownStabilized recent recommendations were higher than current one, applying the highest recent recommendation")
	if hpa.Status.DesiredReplicas != 4 {
		t.Errorf("desiredReplicas: got %d, want 4", hpa.Status.DesiredReplicas)
	}
	r.clock.advance(29 * time.Second)
	if _, err := r.sync(); err != nil {
		t.Fatal(err)
	}
	if got := r.scales.get("web"); got != 4 {
		t.Fatalf("replicas 29 s later: got %d, want 4", got)
	}
	r.clock.advance(2 * time.Second)
	hpa, err = r.sync()
	if err != nil {
		t.Fatal(err)
	}
	// 20% of requests against 50%: 0.4 of four pods.
	if got := r.scales.get("web"); got != 2 {
		t.Fatalf("replicas 31 s later: got %d, want 2", got)
	}
	wantEvents(t, r.drain(), "Normal SuccessfulRescale New size: 2; reason: All metrics below target")
	wantCondition(t, hpa, autoscalingv2.ScalingLimited, "False DesiredWithinRange the desired count is within the acceptable range")
}

func TestBehaviorPoliciesLimitTheRate_G19(t *testing.T) {
	t.Parallel()
	hpa := cpuHPA(1, 20, 50)
	hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}},
		ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}}
	r := newRig(t, controllers.HPASettings{}, hpa, 2)
	r.pod("web-a", 200)
	r.pod("web-b", 200)
	for _, step := range []struct {
		after time.Duration
		want  int32
		limit string
	}{
		{0, 3, "True ScaleUpLimit the desired replica count is increasing faster than the maximum scale rate"},
		{30 * time.Second, 3, "True ScaleUpLimit the desired replica count is increasing faster than the maximum scale rate"},
		{31 * time.Second, 4, "True ScaleUpLimit the desired replica count is increasing faster than the maximum scale rate"},
	} {
		r.clock.advance(step.after)
		got, err := r.sync()
		if err != nil {
			t.Fatal(err)
		}
		if n := r.scales.get("web"); n != step.want {
			t.Fatalf("%v on: replicas %d, want %d", step.after, n, step.want)
		}
		wantCondition(t, got, autoscalingv2.ScalingLimited, step.limit)
	}
	wantEvents(t, r.drain(), "Normal SuccessfulRescale New size: 3; reason: cpu resource utilization (percentage of request) above target",
		"Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target")
}

func TestMinAndMaxReplicasClamp_G19(t *testing.T) {
	t.Parallel()
	t.Run("max", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, controllers.HPASettings{}, cpuHPA(1, 3, 50), 2)
		r.pod("web-a", 200)
		r.pod("web-b", 200)
		hpa, err := r.sync()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.scales.get("web"); got != 3 {
			t.Errorf("replicas: got %d, want 3", got)
		}
		wantCondition(t, hpa, autoscalingv2.ScalingLimited, "True TooManyReplicas the desired replica count is more than the maximum replica count")
	})
	t.Run("min", func(t *testing.T) {
		t.Parallel()
		s := controllers.DefaultHPASettings()
		s.DownscaleStabilization = 0
		r := newRig(t, s, cpuHPA(2, 10, 50), 2)
		r.pod("web-a", 5)
		r.pod("web-b", 5)
		hpa, err := r.sync()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.scales.get("web"); got != 2 {
			t.Errorf("replicas: got %d, want 2", got)
		}
		wantCondition(t, hpa, autoscalingv2.ScalingLimited, "True TooFewReplicas the desired replica count is less than the minimum replica count")
		wantEvents(t, r.drain())
	})
	t.Run("below min", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, controllers.HPASettings{}, cpuHPA(3, 10, 50), 2)
		if _, err := r.sync(); err != nil {
			t.Fatal(err)
		}
		if got := r.scales.get("web"); got != 3 {
			t.Errorf("replicas: got %d, want 3", got)
		}
		wantEvents(t, r.drain(), "Normal SuccessfulRescale New size: 3; reason: Current number of replicas below Spec.MinReplicas")
	})
}

func TestMissingMetricsStopScaling_G19(t *testing.T) {
	t.Parallel()
	r := newRig(t, controllers.HPASettings{}, cpuHPA(1, 10, 50), 2)
	r.pod("web-a", 200)
	r.pod("web-b", 200)
	for _, name := range []string{"web-a", "web-b"} {
		if err := r.metrics.Tracker().Delete(metricsv1beta1.SchemeGroupVersion.WithResource("pods"), "default", name); err != nil {
			t.Fatal(err)
		}
	}
	hpa, err := r.sync()
	if err == nil {
		t.Fatal("sync: got no error, want the metrics' failure")
	}
	if got := r.scales.get("web"); got != 2 {
		t.Errorf("replicas: got %d, want 2", got)
	}
	const cause = "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"
	wantCondition(t, hpa, autoscalingv2.ScalingActive, "False FailedGetResourceMetric the HPA was unable to compute the replica count: "+cause)
	wantCondition(t, hpa, autoscalingv2.AbleToScale, "True SucceededGetScale the HPA controller was able to get the target's current scale")
	wantEvents(t, r.drain(), "Warning FailedGetResourceMetric "+cause,
		"Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: "+cause)
	if hpa.Status.CurrentReplicas != 2 {
		t.Errorf("currentReplicas: got %d, want 2", hpa.Status.CurrentReplicas)
	}
}

func TestTargetNotFound_G19(t *testing.T) {
	t.Parallel()
	r := newRig(t, controllers.HPASettings{}, cpuHPA(1, 10, 50), 2)
	r.scales.mu.Lock()
	delete(r.scales.replicas, "web")
	r.scales.mu.Unlock()
	hpa, err := r.sync()
	if err == nil {
		t.Fatal("sync: got no error, want the scale's")
	}
	const cause = `deployments.apps "web" not found`
	wantCondition(t, hpa, autoscalingv2.AbleToScale, "False FailedGetScale the HPA controller was unable to get the target's current scale: "+cause)
	wantEvents(t, r.drain(), "Warning FailedGetScale "+cause)
	r.scales.set("web", 2)
}

func TestUnreadyAndMissingPodsDampTheChange_G19(t *testing.T) {
	t.Parallel()
	t.Run("unready pods count as idle on a scale-up", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, controllers.HPASettings{}, cpuHPA(1, 20, 50), 3)
		r.pod("web-a", 100)
		r.pod("web-b", 100)
		p := r.pod("web-c", 100)
		// Started a minute ago and not ready: within the CPU
		// initialization period its sample does not count.
		started := metav1.NewTime(r.clock.now().Add(-time.Minute))
		p.Status.StartTime = &started
		p.Status.Conditions[0].Status, p.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, started
		r.cache(p)
		if _, err := r.sync(); err != nil {
			t.Fatal(err)
		}
		// Two pods at 200% and one at 0: 66% of 50 is 1.32 of three pods.
		if got := r.scales.get("web"); got != 4 {
			t.Errorf("replicas: got %d, want 4", got)
		}
	})
	t.Run("missing pods count as at their request on a scale-down", func(t *testing.T) {
		t.Parallel()
		s := controllers.DefaultHPASettings()
		s.DownscaleStabilization = 0
		r := newRig(t, s, cpuHPA(1, 20, 50), 4)
		r.pod("web-a", 10)
		r.pod("web-b", 10)
		r.pod("web-c", 10)
		r.pod("web-d", 10)
		if err := r.metrics.Tracker().Delete(metricsv1beta1.SchemeGroupVersion.WithResource("pods"), "default", "web-d"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.sync(); err != nil {
			t.Fatal(err)
		}
		// Three at 10%, one taken at 100%: 32% of 50 is 0.64 of four pods.
		if got := r.scales.get("web"); got != 3 {
			t.Errorf("replicas: got %d, want 3", got)
		}
	})
}

func TestScalingDisabledAtZeroReplicas_G19(t *testing.T) {
	t.Parallel()
	r := newRig(t, controllers.HPASettings{}, cpuHPA(1, 10, 50), 0)
	hpa, err := r.sync()
	if err != nil {
		t.Fatal(err)
	}
	if got := r.scales.get("web"); got != 0 {
		t.Errorf("replicas: got %d, want 0", got)
	}
	wantCondition(t, hpa, autoscalingv2.ScalingActive, "False ScalingDisabled scaling is disabled since the replica count of the target is zero")
}

func TestMetricsWithoutTheirAPI_G19(t *testing.T) {
	t.Parallel()
	hpa := cpuHPA(1, 10, 50)
	hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("5"))}}}}
	r := newRig(t, controllers.HPASettings{}, hpa, 2)
	r.pod("web-a", 200)
	got, err := r.sync()
	if err == nil {
		t.Fatal("sync: got no error")
	}
	// The condition and the event give the calculator's error, the
	// returned error wraps it.
	const cause = "unable to get external metric default/queue/nil: unable to fetch metrics from external metrics API: no client"
	wantCondition(t, got, autoscalingv2.ScalingActive, "False FailedGetExternalMetric the HPA was unable to compute the replica count: "+cause)
	wantEvents(t, r.drain(), "Warning FailedGetExternalMetric "+cause,
		"Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get queue external metric value: failed to get queue external metric: "+cause)
}

func TestBehaviorScaleDownPolicyAndScaleUpWindow_G19(t *testing.T) {
	t.Parallel()
	t.Run("scale-down policy", func(t *testing.T) {
		t.Parallel()
		hpa := cpuHPA(1, 10, 50)
		hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}}
		r := newRig(t, controllers.HPASettings{}, hpa, 4)
		for _, name := range []string{"web-a", "web-b", "web-c", "web-d"} {
			r.pod(name, 5)
		}
		got, err := r.sync()
		if err != nil {
			t.Fatal(err)
		}
		if n := r.scales.get("web"); n != 3 {
			t.Fatalf("replicas: got %d, want 3", n)
		}
		wantCondition(t, got, autoscalingv2.ScalingLimited, "True ScaleDownLimit the desired replica count is decreasing faster than the maximum scale rate")
		r.clock.advance(30 * time.Second)
		if _, err := r.sync(); err != nil {
			t.Fatal(err)
		}
		if n := r.scales.get("web"); n != 3 {
			t.Fatalf("replicas 30 s later: got %d, want 3", n)
		}
		r.clock.advance(31 * time.Second)
		if _, err := r.sync(); err != nil {
			t.Fatal(err)
		}
		if n := r.scales.get("web"); n != 2 {
			t.Fatalf("replicas 61 s later: got %d, want 2", n)
		}
	})
	t.Run("scale-up window", func(t *testing.T) {
		t.Parallel()
		hpa := cpuHPA(1, 10, 50)
		hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}}
		r := newRig(t, controllers.HPASettings{}, hpa, 2)
		r.pod("web-a", 200)
		r.pod("web-b", 200)
		got, err := r.sync()
		if err != nil {
			t.Fatal(err)
		}
		if n := r.scales.get("web"); n != 2 {
			t.Fatalf("replicas at once: got %d, want 2 (held by the scale-up window)", n)
		}
		wantCondition(t, got, autoscalingv2.AbleToScale, "True ScaleUpStabilized recent recommendations were lower than current one, applying the lowest recent recommendation")
		r.clock.advance(61 * time.Second)
		if _, err := r.sync(); err != nil {
			t.Fatal(err)
		}
		// 100% per 15 s: twice the replicas.
		if n := r.scales.get("web"); n != 4 {
			t.Fatalf("replicas 61 s later: got %d, want 4", n)
		}
	})
}

func TestTwoAutoscalersOfTheSamePods_G19(t *testing.T) {
	t.Parallel()
	r := newRig(t, controllers.HPASettings{}, cpuHPA(1, 10, 50), 2)
	r.pod("web-a", 50)
	other := cpuHPA(1, 10, 50)
	other.Name = "other"
	other, err := r.client.AutoscalingV2().HorizontalPodAutoscalers("default").Create(context.Background(), other, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.cache(other)
	if _, err := r.hc.reconcileKey(context.Background(), "default/other"); err != nil {
		t.Fatal(err)
	}
	hpa, err := r.sync()
	if err == nil {
		t.Fatal("sync: got no error")
	}
	if got := condition(hpa, autoscalingv2.ScalingActive); !strings.HasPrefix(got, "False AmbiguousSelector pods by selector app=web are controlled by more than one HPA") {
		t.Errorf("ScalingActive: got %q, want AmbiguousSelector", got)
	}
}
