package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/kubeconfig"
)

func TestNodesSimulateRefusesBadFlags(t *testing.T) {
	t.Parallel()
	kc := filepath.Join(t.TempDir(), "missing.conf")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no count", []string{"--kubeconfig", kc}, "--count 0: want 1 to 32768 nodes"},
		{"no kubeconfig", []string{"--count", "3"}, "--kubeconfig is required"},
		{"missing kubeconfig", []string{"--count", "3", "--kubeconfig", kc}, "--kubeconfig " + kc},
		{"missing bootstrap kubeconfig", []string{"--count", "3", "--kubeconfig", kc, "--bootstrap-kubeconfig", kc + ".boot"}, "--bootstrap-kubeconfig " + kc + ".boot"},
		{"bad cpu", []string{"--count", "3", "--cpu", "four"}, `--cpu "four": not a quantity`},
		{"zero memory", []string{"--count", "3", "--memory", "0"}, "--memory 0: must be positive"},
		{"too many pods", []string{"--count", "3", "--pods", "300", "--kubeconfig", kc}, "pods 300: want 1 to 253"},
		{"bad prefix", []string{"--count", "3", "--name-prefix", "Node_", "--kubeconfig", kc}, `name prefix "Node_"`},
		{"bad label", []string{"--count", "3", "--labels", "zone"}, `--labels: label "zone": want key=value`},
		{"bad taint", []string{"--count", "3", "--taints", "gpu=yes:Never"}, `--taints: taint gpu effect "Never"`},
		{"zero heartbeat", []string{"--count", "3", "--heartbeat-interval", "0s"}, "--heartbeat-interval and --status-interval must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"nodes", "simulate"}, tc.args...)...)
			if code == 0 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want one line with %q", code, out, errOut, tc.want)
			}
		})
	}
}

// The command against kubegate's apiserver: nodes registered with the
// flags' capacity, labels and taints.
func TestNodesSimulate(t *testing.T) {
	t.Parallel()
	s := apiservertest.Start(t, apiservertest.WithAdmission(), apiservertest.WithoutDefaultServiceAccounts())
	kc := filepath.Join(t.TempDir(), "admin.conf")
	cfg, err := kubeconfig.Build(kubeconfig.Options{Server: s.Config.Host, UserName: "admin", Token: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.Write(kc, cfg, false); err != nil {
		t.Fatal(err)
	}

	o := &nodesSimulateOptions{}
	fs := pflag.NewFlagSet("simulate", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--kubeconfig", kc, "--count", "2", "--name-prefix", "kwok-", "--cpu", "8", "--memory", "32Gi",
		"--pods", "50", "--labels", "zone=b", "--taints", "sim=true:NoSchedule"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var errOut bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- runNodesSimulate(ctx, o, streams{out: &bytes.Buffer{}, err: &errOut}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if want := "registering 2 simulated nodes (kwok-1 … kwok-2)"; !strings.HasPrefix(errOut.String(), want) {
			t.Errorf("stderr %q, want it to start %q", errOut.String(), want)
		}
	}()

	client, err := simulatorClient(kc)
	if err != nil {
		t.Fatal(err)
	}
	var n *corev1.Node
	testwait.For(t, 10*time.Second, "node kwok-2 registered", func() (bool, string) {
		n, err = client.CoreV1().Nodes().Get(ctx, "kwok-2", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	a := n.Status.Allocatable
	if cpu, mem, pods := a[corev1.ResourceCPU], a[corev1.ResourceMemory], a[corev1.ResourcePods]; cpu.String() != "8" || mem.String() != "32Gi" || pods.String() != "50" {
		t.Errorf("allocatable cpu %s, memory %s, pods %s; want 8, 32Gi, 50", cpu.String(), mem.String(), pods.String())
	}
	if n.Labels["zone"] != "b" || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].ToString() != "sim=true:NoSchedule" {
		t.Errorf("labels %v, taints %v", n.Labels, n.Spec.Taints)
	}
}
