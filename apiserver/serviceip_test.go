package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/store"
)

// A Service gives back only the IPAddresses it holds: once its address's
// IPAddress names another parent, deleting the Service leaves it (D.19).
func TestServiceReleasesOnlyItsOwnIPAddress_D19(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.clientset(t, false)
	svc, err := c.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := svc.Spec.ClusterIP
	if err := c.NetworkingV1().IPAddresses().Delete(ctx, ip, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	other := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: ip},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "b"}}}
	if _, err := c.NetworkingV1().IPAddresses().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Services("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.NetworkingV1().IPAddresses().Get(ctx, ip, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the IPAddress of service b went with service a: %v", err)
	}
	if p := got.Spec.ParentRef; p == nil || p.Name != "b" {
		t.Errorf("IPAddress %s parent = %+v, want service b", ip, p)
	}
}

// An address a store holds under the keys of an older kubegate becomes
// its Service's IPAddress when the server starts, so that it is not
// handed out again (D.19).
func TestOlderServiceIPReservationsBecomeIPAddresses_D19(t *testing.T) {
	const ip = "10.96.0.77"
	seed := func(cfg *Config) {
		if _, err := cfg.Store.Create(context.Background(), serviceIPPrefix+ip, []byte(`{"namespace":"default","name":"old"}`)); err != nil {
			t.Fatal(err)
		}
	}
	ts := newTestServer(t, seed)
	ctx := context.Background()
	got, err := ts.clientset(t, false).NetworkingV1().IPAddresses().Get(ctx, ip, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the older reservation of %s is not an IPAddress: %v", ip, err)
	}
	if p := got.Spec.ParentRef; p == nil || p.Resource != "services" || p.Namespace != "default" || p.Name != "old" {
		t.Errorf("IPAddress %s parent = %+v, want services default/old", ip, p)
	}
	if _, err := ts.cfg.Store.Get(ctx, serviceIPPrefix+ip); err == nil {
		t.Errorf("the older key of %s is still there", ip)
	}
}

// maybeAppliedStore applies a create of a key under prefix and then
// answers that it may have been applied, as the etcd store answers a
// resent write it cannot settle (J.4).
type maybeAppliedStore struct {
	store.Store
	prefix string
}

func (m maybeAppliedStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	rev, err := m.Store.Create(ctx, key, value)
	if err == nil && strings.HasPrefix(key, m.prefix) {
		return 0, fmt.Errorf("%w (the member stopped answering)", store.ErrMaybeApplied)
	}
	return rev, err
}

// A Service whose write may have been applied keeps its cluster IP and
// node port reserved: the Service may exist, and another Service must not
// get them (J.4, D.6).
func TestMaybeAppliedServiceKeepsItsAllocations_J4(t *testing.T) {
	ts := newTestServer(t, func(cfg *Config) {
		cfg.Store = maybeAppliedStore{Store: cfg.Store, prefix: Key(servicesGVR, "default", "")}
	})
	ctx := context.Background()
	c := ts.clientset(t, false)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "unsure"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.80",
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}}}
	if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err == nil {
		t.Fatal("the create was answered as applied; the store said it may have been")
	}
	got, err := c.CoreV1().Services("default").Get(ctx, "unsure", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Service the store applied: %v", err)
	}
	if got.Spec.ClusterIP != "10.96.0.80" {
		t.Fatalf("cluster IP %s, want 10.96.0.80", got.Spec.ClusterIP)
	}
	if _, err := c.NetworkingV1().IPAddresses().Get(ctx, "10.96.0.80", metav1.GetOptions{}); err != nil {
		t.Errorf("the applied Service's address was given back: %v", err)
	}
	// The store's wrapper only answers for Services in default: another
	// namespace's Service asking for the same address and port is refused.
	other := svc.DeepCopy()
	other.Name, other.Namespace = "second", "kube-system"
	_, err = c.CoreV1().Services("kube-system").Create(ctx, other, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "already allocated") {
		t.Errorf("a second Service with the applied Service's IP and node port: %v, want 422 already allocated", err)
	}
}
