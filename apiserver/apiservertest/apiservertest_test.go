package apiservertest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/internal/testwait"
)

// A pod created in the default namespace is admitted with the namespace's
// default service account, which the server's controller made.
func TestStartServesWithAdmission(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	testwait.For(t, 10*time.Second, "the default service account", func() (bool, string) {
		_, err := s.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "not yet"
	})
	pod, err := s.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName %q, want default (ServiceAccount admission)", pod.Spec.ServiceAccountName)
	}
}
