package apiserver

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

func testService(name string, spec corev1.ServiceSpec) *corev1.Service {
	if spec.Ports == nil {
		spec.Ports = []corev1.ServicePort{{Port: 80}}
	}
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

// wantStatus checks an error's full message, as kubectl prints it.
func wantAPIStatus(t *testing.T, err error, code int32, msg string) {
	t.Helper()
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("got %v, want a %d Status %q", err, code, msg)
	}
	if got := se.Status(); got.Code != code || got.Message != msg {
		t.Errorf("got %d %q, want %d %q", got.Code, got.Message, code, msg)
	}
}

func TestServiceCreateDefaultsAndAllocates(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	svcs := ts.clientset(t, false).CoreV1().Services("default")
	checkKubernetesService(t, svcs)
	checkClusterIPServiceDefaults(t, svcs, netip.MustParsePrefix("10.96.0.0/12"))
	checkNodePortServiceDefaults(t, svcs)
	checkHeadlessServiceDefaults(t, svcs)
}

// checkKubernetesService: the kubernetes Service has the first address of the range and sends 443 to 6443.
func checkKubernetesService(t *testing.T, svcs corev1client.ServiceInterface) {
	t.Helper()
	ctx := context.Background()
	k, err := svcs.Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the kubernetes service: %v", err)
	}
	if k.Spec.ClusterIP != "10.96.0.1" || k.Spec.Ports[0].Port != 443 || k.Spec.Ports[0].TargetPort != intstr.FromInt(6443) ||
		k.Labels["provider"] != "kubernetes" {
		t.Errorf("kubernetes service: clusterIP %s, ports %v, labels %v; want 10.96.0.1, 443 to 6443, provider=kubernetes", k.Spec.ClusterIP, k.Spec.Ports, k.Labels)
	}
}

// checkClusterIPServiceDefaults: a ClusterIP Service gets an address of cidr and kube's defaults.
func checkClusterIPServiceDefaults(t *testing.T, svcs corev1client.ServiceInterface, cidr netip.Prefix) {
	t.Helper()
	ctx := context.Background()
	svc, err := svcs.Create(ctx, testService("web", corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := svc.Spec
	if ip, err := netip.ParseAddr(s.ClusterIP); err != nil || !cidr.Contains(ip) || s.ClusterIPs[0] != s.ClusterIP {
		t.Errorf("clusterIP %q, clusterIPs %v; want one address of %s in both", s.ClusterIP, s.ClusterIPs, cidr)
	}
	p := s.Ports[0]
	if s.Type != corev1.ServiceTypeClusterIP || s.SessionAffinity != corev1.ServiceAffinityNone ||
		*s.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster || s.ExternalTrafficPolicy != "" ||
		*s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || len(s.IPFamilies) != 1 || s.IPFamilies[0] != corev1.IPv4Protocol ||
		p.Protocol != corev1.ProtocolTCP || p.TargetPort != intstr.FromInt(80) || p.NodePort != 0 {
		t.Errorf("defaults: got %+v", s)
	}
}

// checkNodePortServiceDefaults: ports of the same number share a node port, and the traffic policy defaults to Cluster.
func checkNodePortServiceDefaults(t *testing.T, svcs corev1client.ServiceInterface) {
	t.Helper()
	ctx := context.Background()
	np, err := svcs.Create(ctx, testService("np", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{
		{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53}, {Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
	}}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps := np.Spec.Ports
	for _, p := range ps {
		if p.NodePort < 30000 || p.NodePort > 32767 {
			t.Errorf("port %s: nodePort %d, want one of 30000-32767", p.Name, p.NodePort)
		}
	}
	if ps[0].NodePort != ps[1].NodePort || ps[2].NodePort == ps[0].NodePort || ps[2].TargetPort != intstr.FromString("http") {
		t.Errorf("ports %v: want one node port for both port 53s and another for 80, targetPort http kept", ps)
	}
	if np.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("externalTrafficPolicy %q, want Cluster", np.Spec.ExternalTrafficPolicy)
	}
}

// checkHeadlessServiceDefaults: a headless Service without selector asks for both families.
func checkHeadlessServiceDefaults(t *testing.T, svcs corev1client.ServiceInterface) {
	t.Helper()
	ctx := context.Background()
	h, err := svcs.Create(ctx, testService("headless", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Spec.ClusterIPs[0] != "None" || *h.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack || len(h.Spec.IPFamilies) != 2 {
		t.Errorf("headless without selector: clusterIPs %v, policy %s, families %v; want [None], RequireDualStack, [IPv4 IPv6]",
			h.Spec.ClusterIPs, *h.Spec.IPFamilyPolicy, h.Spec.IPFamilies)
	}
}

func TestServiceRequestedIPsAndPorts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	svcs := ts.clientset(t, false).CoreV1().Services("default")
	ctx := context.Background()

	fixed, err := svcs.Create(ctx, testService("fixed", corev1.ServiceSpec{ClusterIP: "10.96.0.50"}), metav1.CreateOptions{})
	if err != nil || fixed.Spec.ClusterIP != "10.96.0.50" {
		t.Fatalf("requested IP: got %v, %v", fixed, err)
	}
	for _, tc := range []struct {
		name string
		spec corev1.ServiceSpec
		dry  bool
		msg  string
	}{
		{"taken", corev1.ServiceSpec{ClusterIP: "10.96.0.50"}, false,
			`Service "taken" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.50"]: failed to allocate IP 10.96.0.50: provided IP is already allocated`},
		{"kubernetes-ip", corev1.ServiceSpec{ClusterIP: "10.96.0.1"}, false,
			`Service "kubernetes-ip" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP is already allocated`},
		{"outside", corev1.ServiceSpec{ClusterIP: "10.200.0.5"}, false,
			`Service "outside" is invalid: spec.clusterIPs: Invalid value: ["10.200.0.5"]: failed to allocate IP 10.200.0.5: the provided network does not match the current range`},
		{"outside-dry", corev1.ServiceSpec{ClusterIP: "10.200.0.5"}, true,
			`Service "outside-dry" is invalid: spec.clusterIPs: Invalid value: ["10.200.0.5"]: failed to allocate IP 10.200.0.5: the provided IP (10.200.0.5) is not in the valid range. The range of valid IPs is 10.96.0.0/12`},
		{"not-an-ip", corev1.ServiceSpec{ClusterIP: "foo"}, false,
			`Service "not-an-ip" is invalid: spec.clusterIPs[0]: Invalid value: "foo": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
		{"ipv6", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol}}, false,
			`Service "ipv6" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster`},
		{"port-range", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: 8080}}}, false,
			`Service "port-range" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767`},
	} {
		opts := metav1.CreateOptions{}
		if tc.dry {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := svcs.Create(ctx, testService(tc.name, tc.spec), opts)
		wantAPIStatus(t, err, 422, tc.msg)
	}

	nodePort := corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}}
	if _, err := svcs.Create(ctx, testService("np1", nodePort), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = svcs.Create(ctx, testService("np2", nodePort), metav1.CreateOptions{})
	wantAPIStatus(t, err, 422, `Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`)

	// A failed create gives back what it took: np3's cluster IP and node
	// port 30081 are free again.
	_, err = svcs.Create(ctx, testService("np3", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.60",
		Ports: []corev1.ServicePort{{Name: "a", Port: 81, NodePort: 30081}, {Name: "b", Port: 80, NodePort: 30080}}}), metav1.CreateOptions{})
	wantAPIStatus(t, err, 422, `Service "np3" is invalid: spec.ports[1].nodePort: Invalid value: 30080: provided port is already allocated`)
	if _, err := svcs.Create(ctx, testService("np4", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.60",
		Ports: []corev1.ServicePort{{Port: 81, NodePort: 30081}}}), metav1.CreateOptions{}); err != nil {
		t.Errorf("reuse after a failed create: %v", err)
	}

	dry, err := svcs.Create(ctx, testService("dry", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Spec.ClusterIP != "10.96.0.0" || dry.Spec.Ports[0].NodePort != 32769 {
		t.Errorf("dry run: clusterIP %q, nodePort %d, err %v; want kube's placeholders 10.96.0.0 and 32769", dry.Spec.ClusterIP, dry.Spec.Ports[0].NodePort, err)
	}
}

func TestServiceUpdateKeepsClusterIP(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	svcs := ts.clientset(t, false).CoreV1().Services("default")
	ctx := context.Background()
	svc, err := svcs.Create(ctx, testService("web", corev1.ServiceSpec{ClusterIP: "10.96.0.50", Type: corev1.ServiceTypeNodePort}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	_, err = svcs.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"clusterIP":"10.96.0.51"}}`), metav1.PatchOptions{})
	wantAPIStatus(t, err, 422, `Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.51"]: may not change once set`)

	// A manifest without the allocated fields keeps them.
	again := testService("web", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort})
	again.ResourceVersion = svc.ResourceVersion
	got, err := svcs.Update(ctx, again, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.ClusterIP != "10.96.0.50" || got.Spec.Ports[0].NodePort != svc.Spec.Ports[0].NodePort {
		t.Errorf("update without clusterIP and nodePort: got %s and %d, want %s and %d", got.Spec.ClusterIP, got.Spec.Ports[0].NodePort, "10.96.0.50", svc.Spec.Ports[0].NodePort)
	}

	// To ClusterIP: the node port goes, and is free again.
	got, err = svcs.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"type":"ClusterIP"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Ports[0].NodePort != 0 || got.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("to ClusterIP: nodePort %d, externalTrafficPolicy %q; want both cleared", got.Spec.Ports[0].NodePort, got.Spec.ExternalTrafficPolicy)
	}
	reuse := corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: svc.Spec.Ports[0].NodePort}}}
	if _, err := svcs.Create(ctx, testService("reuse-port", reuse), metav1.CreateOptions{}); err != nil {
		t.Errorf("node port released by the update: %v", err)
	}

	// Deleted: the cluster IP is free again.
	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, testService("reuse-ip", corev1.ServiceSpec{ClusterIP: "10.96.0.50"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("cluster IP released by the delete: %v", err)
	}
}

// TestServiceConcurrentCreatesGetDistinctAllocations runs many creates at
// once in a small range; run it with -race.
func TestServiceConcurrentCreatesGetDistinctAllocations(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.ServiceClusterIPRange = netip.MustParsePrefix("10.0.0.0/26") // 62 addresses, one the kubernetes Service's
		c.ServiceNodePortRange = PortRange{First: 30000, Last: 30039}
	})
	svcs := ts.clientset(t, false).CoreV1().Services("default")
	ctx := context.Background()
	const n = 40
	var wg sync.WaitGroup
	results := make([]*corev1.Service, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = svcs.Create(ctx, testService(fmt.Sprintf("s%d", i), corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}), metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	ips, ports := map[string]string{}, map[int32]string{}
	for i, svc := range results {
		if errs[i] != nil {
			t.Fatalf("create s%d: %v", i, errs[i])
		}
		if other, ok := ips[svc.Spec.ClusterIP]; ok {
			t.Errorf("%s and %s both got %s", other, svc.Name, svc.Spec.ClusterIP)
		}
		ips[svc.Spec.ClusterIP] = svc.Name
		np := svc.Spec.Ports[0].NodePort
		if other, ok := ports[np]; ok {
			t.Errorf("%s and %s both got node port %d", other, svc.Name, np)
		}
		ports[np] = svc.Name
	}
	// The node port range is now full.
	_, err := svcs.Create(ctx, testService("one-more", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}), metav1.CreateOptions{})
	wantAPIStatus(t, err, 500, "Internal error occurred: failed to allocate a nodePort: range is full")
}
