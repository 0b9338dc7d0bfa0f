package nodesim_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/nodesim"
)

// serve runs kubegate's apiserver on a bolt store, without admission
// plugins, admitting everyone as an admin, and returns a client-go
// clientset for it that sends contentType.
func serve(t *testing.T, contentType string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(apiservertest.Start(t, apiservertest.WithAdmission(), apiservertest.WithoutDefaultServiceAccounts()).Config)
	cfg.ContentType = contentType
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Through the real API: nodes and leases registered, a pod bound through
// pods/binding turns Running, and a graceful delete is finished.
func TestAgainstAPIServer(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run(ct, func(t *testing.T) {
			t.Parallel()
			client := serve(t, ct)
			ctx, cancel := context.WithCancel(context.Background())
			sim, err := nodesim.New(client, nodesim.Options{Count: 3, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- sim.Run(ctx) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			})
			select {
			case <-sim.Registered():
			case err := <-done:
				t.Fatalf("Run: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("nodes not registered after 10 s")
			}
			if l, err := client.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 3 {
				t.Fatalf("leases after registration: %v, %v; want 3", l, err)
			}
			n, err := client.CoreV1().Nodes().Get(ctx, "node-3", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if cpu := n.Status.Allocatable[corev1.ResourceCPU]; cpu.String() != "4" || n.Spec.PodCIDR != "10.244.2.0/24" || len(n.Status.Conditions) != 4 {
				t.Errorf("node-3: allocatable cpu %s, podCIDR %s, %d conditions", cpu.String(), n.Spec.PodCIDR, len(n.Status.Conditions))
			}

			pods := client.CoreV1().Pods("default")
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest",
					Command: []string{"app"}, Ports: []corev1.ContainerPort{{ContainerPort: 2580}}}}}}
			if pod, err = pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app", UID: pod.UID},
				Target: corev1.ObjectReference{Kind: "Node", Name: "node-2"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 10*time.Second, "app Running", func() (bool, string) {
				p, err := pods.Get(ctx, "app", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return p.Status.Phase == corev1.PodRunning, "phase " + string(p.Status.Phase)
			})
			got, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-2,status.podIP=10.244.1.2,status.phase=Running"})
			if err != nil || len(got.Items) != 1 {
				t.Fatalf("listing app on node-2 at 10.244.1.2: %v, %v", got, err)
			}
			p := got.Items[0]
			if p.Status.HostIP != "10.0.0.2" || len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready || p.Status.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("app status: hostIP %s, containers %+v, qosClass %s", p.Status.HostIP, p.Status.ContainerStatuses, p.Status.QOSClass)
			}

			// The pod is on a node that exists: the delete only marks it,
			// and the simulated node finishes it.
			if err := pods.Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 10*time.Second, "app gone", func() (bool, string) {
				p, err := pods.Get(ctx, "app", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, ""
				}
				if err != nil {
					return false, err.Error()
				}
				return false, fmt.Sprintf("phase %s, deletionTimestamp %v", p.Status.Phase, p.DeletionTimestamp)
			})
		})
	}
}
