package apiserver

//lint:file-ignore SA1019 v1 Endpoints are written for the kubernetes Service as kube-apiserver writes them (J.3)

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWantedEndpoints_J3: the endpoints are written only when the leases'
// addresses, the format or the label differ, and the ports only when
// asked (at start and stop), so that servers sharing the Endpoints do not
// rewrite them in turn.
func TestWantedEndpoints_J3(t *testing.T) {
	t.Parallel()
	ports := []corev1.EndpointPort{{Name: "https", Port: 6443, Protocol: corev1.ProtocolTCP}}
	other := []corev1.EndpointPort{{Name: "https", Port: 7443, Protocol: corev1.ProtocolTCP}}
	ep := func(ports []corev1.EndpointPort, ips ...string) *corev1.Endpoints {
		e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}}}
		var addrs []corev1.EndpointAddress
		for _, ip := range ips {
			addrs = append(addrs, corev1.EndpointAddress{IP: ip})
		}
		e.Subsets = []corev1.EndpointSubset{{Addresses: addrs, Ports: ports}}
		return e
	}
	unlabelled := ep(ports, "198.18.0.1")
	unlabelled.Labels = nil
	tests := []struct {
		name           string
		have           *corev1.Endpoints
		ips            []string
		reconcilePorts bool
		want           *corev1.Endpoints // nil: no write
	}{
		{"the same set in another order", ep(ports, "198.18.0.2", "198.18.0.1"), []string{"198.18.0.1", "198.18.0.2"}, true, nil},
		{"another server's port, not reconciled", ep(other, "198.18.0.1"), []string{"198.18.0.1"}, false, nil},
		{"another server's port at start", ep(other, "198.18.0.1"), []string{"198.18.0.1"}, true, ep(ports, "198.18.0.1")},
		{"a server more", ep(ports, "198.18.0.1"), []string{"198.18.0.1", "198.18.0.2"}, false, ep(ports, "198.18.0.1", "198.18.0.2")},
		{"a server less keeps the ports", ep(other, "198.18.0.1", "198.18.0.2"), []string{"198.18.0.2"}, false, ep(other, "198.18.0.2")},
		{"no label", unlabelled, []string{"198.18.0.1"}, false, ep(ports, "198.18.0.1")},
		{"new", &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"}}, []string{"198.18.0.1"}, false, ep(ports, "198.18.0.1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wantedEndpoints(tt.have, tt.ips, ports, tt.reconcilePorts)
			if (got == nil) != (tt.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if got != nil && (got.Labels[discoveryv1.LabelSkipMirror] != "true" || len(got.Subsets) != 1 ||
				len(got.Subsets[0].Addresses) != len(tt.want.Subsets[0].Addresses) || got.Subsets[0].Ports[0] != tt.want.Subsets[0].Ports[0]) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("the last server stopping leaves no subset", func(t *testing.T) {
		got := wantedEndpoints(ep(ports, "198.18.0.1"), nil, ports, true)
		if got == nil || len(got.Subsets) != 0 {
			t.Fatalf("got %+v, want no subset", got)
		}
		if sl := sliceFromEndpoints(got); len(sl.Endpoints) != 0 || len(sl.Ports) != 0 || sl.AddressType != discoveryv1.AddressTypeIPv4 {
			t.Errorf("slice: got %+v, want an empty IPv4 slice", sl)
		}
	})
	t.Run("an IPv6 slice", func(t *testing.T) {
		sl := sliceFromEndpoints(ep(ports, "2001:db8::1"))
		if sl.AddressType != discoveryv1.AddressTypeIPv6 || len(sl.Endpoints) != 1 || !*sl.Endpoints[0].Conditions.Ready ||
			*sl.Ports[0].Name != "https" || *sl.Ports[0].Port != 6443 || sl.Labels[discoveryv1.LabelServiceName] != "kubernetes" {
			t.Errorf("got %+v", sl)
		}
	})
}

// TestCheckAdvertiseAddress_J3: the lease reconciler refuses what an
// endpoint may not hold, and an address of another family than the
// service range, as kube-apiserver does at start.
func TestCheckAdvertiseAddress_J3(t *testing.T) {
	t.Parallel()
	tests := []struct{ ip, want string }{
		{"192.0.2.10", ""},
		{"127.0.0.1", "cannot use public IP 127.0.0.1 with endpoint reconciler: may not be in the loopback range (127.0.0.0/8, ::1/128)"},
		{"0.0.0.0", "cannot use public IP 0.0.0.0 with endpoint reconciler: may not be unspecified (0.0.0.0)"},
		{"169.254.1.1", "may not be in the link-local range"},
		{"2001:db8::1", `service IP family "10.96.0.0/12" must match public address family "2001:db8::1"`},
	}
	for _, tt := range tests {
		err := CheckAdvertiseAddress(netip.MustParseAddr(tt.ip), DefaultServiceClusterIPRange)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.ip, err, tt.want)
		}
	}
}
