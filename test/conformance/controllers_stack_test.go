package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testwait"
)

// simulatedNodes is how many nodes both control planes run.
const simulatedNodes = 3

// cluster is a control plane under comparison with its controllers,
// kubegate's scheduler and simulatedNodes simulated nodes.
type cluster struct {
	*server
	config  *rest.Config
	client  kubernetes.Interface
	dynamic dynamic.Interface
}

// startKubeCluster runs etcd and kube-apiserver (startKubeAPIServer),
// kube-controller-manager with kubeadm's flags, and kubegate's scheduler
// and simulated nodes as clients of that API server.
//
// kube-controller-manager runs as kubeadm runs it: as
// system:kube-controller-manager (controller-manager.conf), each
// controller under its own service account
// (--use-service-account-credentials), every default controller
// (--controllers=*), the tree's CA signing certificates and publishing it
// to every namespace (kube-root-ca.crt), and the service-account key for
// legacy token secrets. It does not elect a leader (one instance) and
// serves no port of its own (--secure-port=0). The node monitor keeps its
// defaults: the simulated nodes renew their leases every 10 s.
func startKubeCluster(t *testing.T, bin string) *cluster {
	t.Helper()
	s := startKubeAPIServer(t, bin)
	pki := func(name string) string { return filepath.Join(s.dir, "pki", name) }
	conf := func(name string) string { return filepath.Join(s.dir, name) }
	logs := map[string]string{}
	for _, name := range []string{"kube-controller-manager", "scheduler", "nodes"} {
		logs[name] = filepath.Join(s.dir, name+".log")
		s.logs = append(s.logs, logs[name])
	}
	start(t, logs["kube-controller-manager"], filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+conf("controller-manager.conf"),
		"--authentication-kubeconfig="+conf("controller-manager.conf"),
		"--authorization-kubeconfig="+conf("controller-manager.conf"),
		"--use-service-account-credentials=true",
		"--controllers=*",
		"--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--client-ca-file="+pki("ca.crt"), "--requestheader-client-ca-file="+pki("front-proxy-ca.crt"),
		"--root-ca-file="+pki("ca.crt"),
		"--cluster-signing-cert-file="+pki("ca.crt"), "--cluster-signing-key-file="+pki("ca.key"),
		"--service-account-private-key-file="+pki("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/12")
	start(t, logs["scheduler"], kubegateBin, "scheduler", "--kubeconfig", conf("scheduler.conf"))
	start(t, logs["nodes"], kubegateBin, "nodes", "simulate", "--kubeconfig", conf("admin.conf"),
		"--count", fmt.Sprint(simulatedNodes))
	return newCluster(t, s)
}

// startKubegateCluster runs `kubegate up` with simulatedNodes nodes: its
// API server, scheduler, simulated nodes and controllers.
func startKubegateCluster(t *testing.T) *cluster {
	t.Helper()
	return newCluster(t, startKubegate(t, "--nodes", fmt.Sprint(simulatedNodes)))
}

// newCluster makes the clients of s's administrator and waits until every
// simulated node is Ready and schedulable: without the not-ready taint,
// which the node lifecycle controller lifts.
func newCluster(t *testing.T, s *server) *cluster {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	c := &cluster{server: s, config: cfg}
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 90*time.Second, s.name+": "+fmt.Sprint(simulatedNodes)+" schedulable nodes", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		ready := 0
		for _, n := range nodes.Items {
			ok := len(n.Spec.Taints) == 0
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
					ok = false
				}
			}
			if ok {
				ready++
			}
			seen = append(seen, fmt.Sprintf("%s taints=%v", n.Name, n.Spec.Taints))
		}
		return ready == simulatedNodes, strings.Join(seen, ", ") + s.tailLogs()
	})
	return c
}
