package up

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestServiceAllocationsSurviveARestart checks that a Service keeps its
// cluster IP and node port across a restart of the cluster, and that the
// next run does not hand them out again.
func TestServiceAllocationsSurviveARestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	port := freePort(t)
	cs, stop := cluster(t, dir, port)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")

	k, err := svcs.Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if k.Spec.ClusterIP != "10.96.0.1" || k.Spec.Ports[0].TargetPort != intstr.FromInt(port) {
		t.Errorf("kubernetes service: clusterIP %s, targetPort %v; want 10.96.0.1 and the secure port %d", k.Spec.ClusterIP, k.Spec.Ports[0].TargetPort, port)
	}
	created, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}

	cs, _ = cluster(t, dir, port)
	svcs = cs.CoreV1().Services("default")
	got, err := svcs.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, np := created.Spec.ClusterIP, created.Spec.Ports[0].NodePort
	if got.Spec.ClusterIP != ip || got.Spec.Ports[0].NodePort != np {
		t.Errorf("after restart: %s and %d, want %s and %d", got.Spec.ClusterIP, got.Spec.Ports[0].NodePort, ip, np)
	}
	_, err = svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "same-ip"},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	want := `Service "same-ip" is invalid: spec.clusterIPs: Invalid value: ["` + ip + `"]: failed to allocate IP ` + ip + `: provided IP is already allocated`
	if err == nil || err.Error() != want {
		t.Errorf("create with the IP taken before the restart: got %v, want %s", err, want)
	}
	_, err = svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "same-port"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: np}}}}, metav1.CreateOptions{})
	want = `Service "same-port" is invalid: spec.ports[0].nodePort: Invalid value: ` + strconv.Itoa(int(np)) + `: provided port is already allocated`
	if err == nil || err.Error() != want {
		t.Errorf("create with the node port taken before the restart: got %v, want %s", err, want)
	}
}

// TestKubernetesEndpointsAreTheGateway_J3: the kubernetes Service's
// endpoints are the gateway, at the address up advertises (given, or
// chosen as kube-apiserver chooses it) and the gateway's port; an
// address no endpoint may hold is refused.
func TestKubernetesEndpointsAreTheGateway_J3(t *testing.T) {
	port := freePort(t)
	cs, _ := clusterWith(t, Options{Dir: filepath.Join(t.TempDir(), "cluster"), SecurePort: port, AdvertiseAddress: "192.0.2.77"})
	ep, err := cs.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 || ep.Subsets[0].Addresses[0].IP != "192.0.2.77" ||
		ep.Subsets[0].Ports[0].Port != int32(port) || ep.Subsets[0].Ports[0].Name != "https" {
		t.Errorf("endpoints: got %+v, want 192.0.2.77 on https %d", ep.Subsets, port)
	}
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil || len(slice.Endpoints) != 1 || slice.Endpoints[0].Addresses[0] != "192.0.2.77" || *slice.Ports[0].Port != int32(port) {
		t.Errorf("endpointslice: got %+v, err %v", slice, err)
	}

	_, err = Start(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "cluster"), SecurePort: freePort(t),
		AdvertiseAddress: "127.0.0.1", InitPKI: initPKI})
	if err == nil || !strings.Contains(err.Error(), "cannot use public IP 127.0.0.1 with endpoint reconciler") {
		t.Errorf("a loopback advertise address: got %v, want it refused", err)
	}
}
