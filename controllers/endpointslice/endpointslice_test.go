package endpointslice_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/endpointslice"
	"github.com/kubegate/kubegate/internal/testwait"
)

const ns = "default"

// defaultNode is the node of the pods the tests place on none.
const defaultNode = "n0"

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	return controllertest.Start(t, endpointslice.Descriptor).Client
}

// createPod creates a pod labelled app=web with a container port named
// http (8080) on node (defaultNode when empty, made if missing: the
// reconciler leaves out a pod whose node it does not know), and, with an
// ip, gives it that IP and the ready state.
func createPod(t *testing.T, c kubernetes.Interface, name, node, ip string, ready bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	if node == "" {
		node = defaultNode
		_, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}
	pod, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip == "" {
		return pod
	}
	return setStatus(t, c, pod, ip, ready)
}

func setStatus(t *testing.T, c kubernetes.Interface, pod *corev1.Pod, ip string, ready bool) *corev1.Pod {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}}
	pod, err := c.CoreV1().Pods(ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func createService(t *testing.T, c kubernetes.Interface, name string, selector map[string]string, clusterIP string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{Selector: selector, ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}}
	svc, err := c.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func slicesOf(t *testing.T, c kubernetes.Interface, svc string) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := c.DiscoveryV1().EndpointSlices(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// describe writes a service's endpoints as IP:ready/serving/terminating,
// sorted, over all its slices.
func describe(slices []discoveryv1.EndpointSlice) string {
	var out []string
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			c := ep.Conditions
			out = append(out, fmt.Sprintf("%s:%t/%t/%t", strings.Join(ep.Addresses, ","), *c.Ready, *c.Serving, *c.Terminating))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestSlicesHoldTheSelectedPodsWithIPs_G10: a Service with a selector gets
// one slice named from it, labelled and owned as kube's, with an endpoint
// per selected pod that has an IP: its conditions from its readiness, its
// node, zone and pod, and the port its named target port resolves to.
func TestSlicesHoldTheSelectedPodsWithIPs_G10(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "z1"}}}
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(t, c, "ready", "n1", "10.1.0.1", true)
	notReady := createPod(t, c, "not-ready", "n1", "10.1.0.2", false)
	createPod(t, c, "no-ip", "n1", "", false)
	other, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setStatus(t, c, other, "10.1.0.9", true)
	manual := createService(t, c, "manual", nil, "")
	svc := createService(t, c, "web", map[string]string{"app": "web"}, "")

	testwait.For(t, 30*time.Second, "the slice of web", func() (bool, string) {
		got := describe(slicesOf(t, c, "web"))
		return got == "10.1.0.1:true/true/false 10.1.0.2:false/false/false", got
	})
	slices := slicesOf(t, c, "web")
	if len(slices) != 1 {
		t.Fatalf("%d slices, want 1", len(slices))
	}
	s := slices[0]
	if !strings.HasPrefix(s.Name, "web-") || s.GenerateName != "web-" {
		t.Errorf("name %q, generateName %q; want web-<random>", s.Name, s.GenerateName)
	}
	if s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" || s.Labels["tier"] != "front" {
		t.Errorf("labels %v; want the Service's, its name and the manager's", s.Labels)
	}
	if !metav1.IsControlledBy(&s, svc) {
		t.Errorf("owners %v; want the Service as controller", s.OwnerReferences)
	}
	if s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.Ports) != 1 || *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "" ||
		*s.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("addressType %s, ports %+v; want IPv4 and 8080/TCP unnamed", s.AddressType, s.Ports)
	}
	if s.Annotations[corev1.EndpointsLastChangeTriggerTime] == "" {
		t.Errorf("annotations %v; want %s", s.Annotations, corev1.EndpointsLastChangeTriggerTime)
	}
	for _, ep := range s.Endpoints {
		if ep.NodeName == nil || *ep.NodeName != "n1" || ep.Zone == nil || *ep.Zone != "z1" || ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" {
			t.Errorf("endpoint %+v; want node n1, zone z1 and its pod", ep)
		}
	}

	// Readiness follows the pod; a pod deleted at once leaves.
	setStatus(t, c, notReady, "10.1.0.2", true)
	if err := c.CoreV1().Pods(ns).Delete(ctx, "ready", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the slice follows the pods", func() (bool, string) {
		got := describe(slicesOf(t, c, "web"))
		return got == "10.1.0.2:true/true/false", got
	})
	// A pod being deleted (its node has to confirm it) stays, serving
	// and terminating, no longer ready.
	if err := c.CoreV1().Pods(ns).Delete(ctx, "not-ready", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the terminating endpoint", func() (bool, string) {
		got := describe(slicesOf(t, c, "web"))
		return got == "10.1.0.2:false/true/true", got
	})
	if n := len(slicesOf(t, c, manual.Name)); n != 0 {
		t.Errorf("the Service without a selector has %d slices; want none", n)
	}
}

// TestSlicesHoldAtMost100Endpoints_G10: 150 pods take two slices; a
// Service with no pods keeps one empty placeholder.
func TestSlicesHoldAtMost100Endpoints_G10(t *testing.T) {
	c := start(t)
	createService(t, c, "empty", map[string]string{"app": "none"}, "")
	for i := range 150 {
		createPod(t, c, fmt.Sprintf("p%03d", i), "", fmt.Sprintf("10.2.%d.%d", i/200, i%200+1), true)
	}
	createService(t, c, "web", map[string]string{"app": "web"}, "")
	testwait.For(t, 60*time.Second, "150 endpoints in 2 slices", func() (bool, string) {
		var sizes []int
		total := 0
		for _, s := range slicesOf(t, c, "web") {
			sizes = append(sizes, len(s.Endpoints))
			total += len(s.Endpoints)
		}
		sort.Ints(sizes)
		return fmt.Sprint(sizes) == "[50 100]", fmt.Sprintf("sizes %v, total %d", sizes, total)
	})
	testwait.For(t, 30*time.Second, "a placeholder for empty", func() (bool, string) {
		s := slicesOf(t, c, "empty")
		return len(s) == 1 && len(s[0].Endpoints) == 0 && len(s[0].Ports) == 0, fmt.Sprintf("%+v", s)
	})
}

// TestHeadlessServiceSlices_G10: a headless Service's slices carry the
// service.kubernetes.io/headless label.
func TestHeadlessServiceSlices_G10(t *testing.T) {
	c := start(t)
	createPod(t, c, "a", "", "10.3.0.1", true)
	createService(t, c, "web", map[string]string{"app": "web"}, corev1.ClusterIPNone)
	testwait.For(t, 30*time.Second, "the headless slice", func() (bool, string) {
		s := slicesOf(t, c, "web")
		if len(s) != 1 {
			return false, fmt.Sprintf("%d slices", len(s))
		}
		_, headless := s[0].Labels[corev1.IsHeadlessService]
		return headless && describe(s) == "10.3.0.1:true/true/false", fmt.Sprintf("%v %s", s[0].Labels, describe(s))
	})
}

// TestPodOnUnknownNodeIsLeftOut_G10: a pod whose node the node cache does
// not hold gets no endpoint, as kube's reconciler decides, and the Service
// is retried until the node is there.
func TestPodOnUnknownNodeIsLeftOut_G10(t *testing.T) {
	c := start(t)
	createPod(t, c, "a", "", "10.4.0.1", true)
	createPod(t, c, "lost", "n-later", "10.4.0.2", true)
	createService(t, c, "web", map[string]string{"app": "web"}, "")
	testwait.For(t, 30*time.Second, "the slice without the pod on an unknown node", func() (bool, string) {
		got := describe(slicesOf(t, c, "web"))
		return got == "10.4.0.1:true/true/false", got
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-later"}}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the pod's endpoint once its node is known", func() (bool, string) {
		got := describe(slicesOf(t, c, "web"))
		return got == "10.4.0.1:true/true/false 10.4.0.2:true/true/false", got
	})
}
