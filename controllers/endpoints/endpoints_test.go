package endpoints_test

//lint:file-ignore SA1019 v1 Endpoints are deprecated, and served and kept as kube does (G.10)

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/endpoints"
	"github.com/kubegate/kubegate/internal/testwait"
)

const ns = "default"

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	return controllertest.Start(t, endpoints.Descriptor).Client
}

// createPod creates a pod labelled app=web serving port 8080 named http,
// with ip and its readiness when ip is set.
func createPod(t *testing.T, c kubernetes.Interface, name, ip string, ready bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}
	pod, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip == "" {
		return pod
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}}
	if pod, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pod
}

func createService(t *testing.T, c kubernetes.Interface, name, clusterIP string, ports ...corev1.ServicePort) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: clusterIP, Ports: ports}}
	if _, err := c.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// describe writes subsets as ready IPs | not-ready IPs | ports.
func describe(e *corev1.Endpoints) string {
	out := ""
	for _, ss := range e.Subsets {
		out += "["
		for _, a := range ss.Addresses {
			out += a.IP + " "
		}
		out += "|"
		for _, a := range ss.NotReadyAddresses {
			out += " " + a.IP
		}
		out += " |"
		var ports []string
		for _, p := range ss.Ports {
			ports = append(ports, fmt.Sprintf(" %s:%d/%s", p.Name, p.Port, p.Protocol))
		}
		sort.Strings(ports) // kube orders them by a hash
		out += strings.Join(ports, "")
		out += "]"
	}
	return out
}

func get(c kubernetes.Interface, name string) (*corev1.Endpoints, error) {
	return c.CoreV1().Endpoints(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// TestEndpointsSplitReadyFromNotReady_G10: the Endpoints named like the
// Service hold the ready pods' IPs under addresses and the others under
// notReadyAddresses, on the ports the Service's target ports resolve to,
// with the Service's labels, the manager's and the trigger time; deleted,
// they are made again; the Service deleted, they go.
func TestEndpointsSplitReadyFromNotReady_G10(t *testing.T) {
	c := start(t)
	createPod(t, c, "a", "10.1.0.2", true)
	createPod(t, c, "b", "10.1.0.1", true)
	createPod(t, c, "c", "10.1.0.3", false)
	createPod(t, c, "no-ip", "", false)
	createService(t, c, "web", "",
		corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
		corev1.ServicePort{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090)})

	const want = "[10.1.0.1 10.1.0.2 | 10.1.0.3 | http:8080/TCP metrics:9090/TCP]"
	testwait.For(t, 30*time.Second, "the Endpoints of web", func() (bool, string) {
		e, err := get(c, "web")
		if err != nil {
			return false, err.Error()
		}
		return describe(e) == want, describe(e)
	})
	e, _ := get(c, "web")
	if e.Labels["tier"] != "front" || e.Labels[endpoints.LabelManagedBy] != endpoints.ControllerName {
		t.Errorf("labels %v; want the Service's and %s", e.Labels, endpoints.LabelManagedBy)
	}
	if _, err := time.Parse(time.RFC3339Nano, e.Annotations[corev1.EndpointsLastChangeTriggerTime]); err != nil {
		t.Errorf("annotations %v; want a trigger time: %v", e.Annotations, err)
	}
	a := e.Subsets[0].Addresses[0]
	if a.NodeName == nil || *a.NodeName != "n1" || a.TargetRef == nil || a.TargetRef.Name != "b" || a.TargetRef.Kind != "Pod" {
		t.Errorf("address %+v; want node n1 and pod b", a)
	}

	if err := c.CoreV1().Endpoints(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the Endpoints made again", func() (bool, string) {
		e, err := get(c, "web")
		if err != nil {
			return false, err.Error()
		}
		return describe(e) == want, describe(e)
	})

	if err := c.CoreV1().Services(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the Endpoints gone with the Service", func() (bool, string) {
		_, err := get(c, "web")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestHeadlessEndpointsWithoutPorts_G10: a headless Service without ports
// lists its pods' addresses with no ports and is labelled headless; a
// Service whose pods have none of its named target port gets empty
// Endpoints.
func TestHeadlessEndpointsWithoutPorts_G10(t *testing.T) {
	c := start(t)
	createPod(t, c, "a", "10.2.0.1", true)
	createService(t, c, "headless", corev1.ClusterIPNone)
	createService(t, c, "nowhere", "", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")})
	testwait.For(t, 30*time.Second, "the headless Endpoints", func() (bool, string) {
		e, err := get(c, "headless")
		if err != nil {
			return false, err.Error()
		}
		_, headless := e.Labels[corev1.IsHeadlessService]
		return headless && describe(e) == "[10.2.0.1 | |]", fmt.Sprint(e.Labels, describe(e))
	})
	testwait.For(t, 30*time.Second, "empty Endpoints for nowhere", func() (bool, string) {
		e, err := get(c, "nowhere")
		if err != nil {
			return false, err.Error()
		}
		return len(e.Subsets) == 0, describe(e)
	})
}
