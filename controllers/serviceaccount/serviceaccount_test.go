package serviceaccount_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/serviceaccount"
	"github.com/kubegate/kubegate/internal/testwait"
)

func waitForDefault(t *testing.T, c kubernetes.Interface, ns string) *corev1.ServiceAccount {
	t.Helper()
	var sa *corev1.ServiceAccount
	testwait.For(t, 30*time.Second, ns+"/default", func() (bool, string) {
		var err error
		sa, err = c.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return sa
}

// TestEveryNamespaceGetsTheDefaultServiceAccount_G11: on an API server
// that makes none itself, as kube-apiserver, the controller gives the
// namespaces there are and each new one a "default" ServiceAccount, and
// makes it again when it is deleted.
func TestEveryNamespaceGetsTheDefaultServiceAccount_G11(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithoutDefaultServiceAccounts())
	c := s.Client
	ctx := context.Background()
	if _, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
		t.Fatal("the server made default/default itself; the test needs one that does not")
	}
	controllertest.Run(t, s, manager.Options{Descriptors: []controllers.Descriptor{serviceaccount.Descriptor}})
	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		waitForDefault(t, c, ns)
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitForDefault(t, c, "team")
	if err := c.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "team/default made again", func() (bool, string) {
		sa, err := c.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
		return err == nil && sa.UID != first.UID, fmt.Sprint(err)
	})
}
