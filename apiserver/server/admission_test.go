package server

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestWebhookServiceResolvesToAReadyEndpoint_D13(t *testing.T) {
	t.Parallel()
	svc := func(name string, typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: name},
			Spec: corev1.ServiceSpec{Type: typ, ClusterIP: "10.96.0.10", Ports: ports, ExternalName: "hooks.example.com"}}
	}
	slice := func(name, svc string, port int32, ready *bool, addr string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, AddressType: discoveryv1.AddressTypeIPv4,
			Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}}}
	}
	https := corev1.ServicePort{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}
	client := fake.NewClientset(
		svc("web", corev1.ServiceTypeClusterIP, https),
		slice("web-a", "web", 8443, ptr.To(false), "10.0.0.1"),
		slice("web-b", "web", 8443, nil, "10.0.0.2"),
		svc("idle", corev1.ServiceTypeClusterIP, https),
		slice("idle-a", "idle", 8443, ptr.To(false), "10.0.0.3"),
		svc("outside", corev1.ServiceTypeExternalName),
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	r := endpointResolver{services: factory.Core().V1().Services().Lister(), slices: factory.Discovery().V1().EndpointSlices().Lister()}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	tests := []struct {
		name    string
		port    int32
		want    string
		wantErr string
	}{
		{name: "web", port: 443, want: "https://10.0.0.2:8443"},
		{name: "web", port: 80, wantErr: `no service port 80 found for service "web"`},
		{name: "idle", port: 443, wantErr: `service "idle" unavailable`},
		{name: "outside", port: 443, want: "https://hooks.example.com:443"},
		{name: "missing", port: 443, wantErr: `service "missing" not found`},
	}
	for _, tt := range tests {
		u, err := r.ResolveEndpoint("hooks", tt.name, tt.port)
		switch {
		case tt.wantErr != "":
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s:%d: got %v, %v; want error %q", tt.name, tt.port, u, err, tt.wantErr)
			}
		case err != nil || u.String() != tt.want:
			t.Errorf("%s:%d: got %v, %v; want %s", tt.name, tt.port, u, err, tt.want)
		}
	}
}
