package core_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
)

// The proxy subresources find what kube-apiserver would dial, with its
// refusals on the way, and answer kube's 503 for a target that cannot be
// reached, as simulated pods and nodes listen nowhere (D.9).
func TestProxySubresources_D9(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	ctx := context.Background()
	cs := srv.Client
	if _, err := cs.CoreV1().Pods("default").Create(ctx, testPod("noip"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withIP, err := cs.CoreV1().Pods("default").Create(ctx, testPod("ip"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withIP.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.7"}}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, withIP, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.18.0.2"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port, name, ready := int32(8080), "http", true
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "ip"}}}}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	unreachable := func(addr string) string {
		return "error trying to reach service: dial tcp " + addr + ": kubegate's simulated nodes and pods listen on no address"
	}
	tests := []struct {
		name, method, path string
		code               int
		message            string
	}{
		{"a pod without an IP", "GET", "namespaces/default/pods/noip/proxy", 400, "address not allowed"},
		{"a pod that does not exist", "GET", "namespaces/default/pods/gone/proxy/", 404, `pods "gone" not found`},
		{"a name that does not split", "GET", "namespaces/default/pods/a:b:c:d/proxy", 400, `invalid pod request "a:b:c:d"`},
		{"a pod at its first port", "GET", "namespaces/default/pods/ip/proxy/healthz", 503, unreachable("10.244.1.7:2580")},
		{"a pod at a port named", "DELETE", "namespaces/default/pods/ip:81/proxy/x/y", 503, unreachable("10.244.1.7:81")},
		{"a node's kubelet", "POST", "nodes/node-1/proxy/stats/summary", 503, unreachable("172.18.0.2:10250")},
		{"a node that does not exist", "GET", "nodes/gone/proxy", 404, `nodes "gone" not found`},
		{"a service's ready endpoint", "PUT", "namespaces/default/services/web:http/proxy/", 503, unreachable("10.244.1.7:8080")},
		{"a service port by number", "PATCH", "namespaces/default/services/web:80/proxy", 503, unreachable("10.244.1.7:8080")},
		{"a service port it does not have", "GET", "namespaces/default/services/web:81/proxy", 503, `no service port 81 found for service "web"`},
		{"a service without that port's endpoints", "GET", "namespaces/default/services/web/proxy", 503, `no endpoints available for service "web"`},
		{"a service that does not exist", "GET", "namespaces/default/services/gone/proxy", 503, `no endpoints available for service "gone"`},
		{"a resource without proxy", "GET", "namespaces/default/configmaps/x/proxy/a", 404, "the server could not find the requested resource"},
	}
	for _, tt := range tests {
		code, st := answer(t, srv, tt.method, "/api/v1/"+tt.path, "")
		if code != tt.code || st["message"] != tt.message {
			t.Errorf("%s: got %d %q, want %d %q", tt.name, code, st["message"], tt.code, tt.message)
		}
	}
}
