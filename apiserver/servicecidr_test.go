package apiserver

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A default ServiceCIDR left from another configuration, whose CIDRs are
// not the server's range, is not marked Ready, as kube's
// default-service-cidr controller leaves it (D.19).
func TestDefaultServiceCIDROfAnotherRangeIsNotMarkedReady_D19(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.clientset(t, false)
	if err := c.NetworkingV1().ServiceCIDRs().Delete(ctx, defaultServiceCIDRName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NetworkingV1().ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: defaultServiceCIDRName},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"192.168.0.0/24"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ts.ensureDefaultServiceCIDR(ctx); err != nil {
		t.Fatal(err)
	}
	sc, err := c.NetworkingV1().ServiceCIDRs().Get(ctx, defaultServiceCIDRName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cond := apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady); cond != nil {
		t.Errorf("default ServiceCIDR %v (server range %s) marked %s, want it left without Ready as kube does", sc.Spec.CIDRs, ts.svcAlloc.cidr, cond.Status)
	}
}
