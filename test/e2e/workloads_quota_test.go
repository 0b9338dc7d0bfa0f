package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// quotaPodYAML is a pod asking for 200m of cpu.
const quotaPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: qa
spec:
  containers:
  - name: c
    image: busybox
    resources:
      requests:
        cpu: 200m
`

// TestQuotaWithKubectl_G21 runs `kubegate up` and checks, with real
// kubectl, that a quota made by `kubectl create quota` counts the pods of
// its namespace as they come and go (the resource quota controller,
// docs/kubernetes-behaviour.md G.21), and that the pod that would exceed
// it is refused with kube-apiserver's message (D.14).
func TestQuotaWithKubectl_G21(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0)
	defer c.stop(t)

	must(t, c.kubectl(t, nil, "create", "namespace", "qa"), "namespace/qa created")
	must(t, c.kubectl(t, nil, "create", "quota", "compute", "-n", "qa", "--hard=pods=2,requests.cpu=1"), "resourcequota/compute created")
	// used, as `kubectl describe quota` prints it: resource, used, hard.
	waitUsed := func(pods, cpu string) {
		t.Helper()
		want := [][]string{{"pods", pods, "2"}, {"requests.cpu", cpu, "1"}}
		testwait.For(t, 30*time.Second, fmt.Sprintf("quota used pods=%s requests.cpu=%s", pods, cpu), func() (bool, string) {
			res := c.kubectl(t, nil, "describe", "quota", "compute", "-n", "qa")
			var rows [][]string
			for _, line := range strings.Split(res.stdout, "\n") {
				if f := strings.Fields(line); len(f) == 3 && (f[0] == "pods" || f[0] == "requests.cpu") {
					rows = append(rows, f)
				}
			}
			return res.code == 0 && slices.EqualFunc(rows, want, slices.Equal), res.stdout + res.stderr
		})
	}
	waitUsed("0", "0")
	createPod := func(name string) result {
		return c.kubectl(t, fmt.Appendf(nil, quotaPodYAML, name), "create", "-f", "-")
	}
	must(t, createPod("p1"), "pod/p1 created")
	waitUsed("1", "200m")
	must(t, createPod("p2"), "pod/p2 created")
	waitUsed("2", "400m")

	res := createPod("p3")
	const refusal = `pods "p3" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2`
	if res.code != 1 || !strings.Contains(res.stderr, "Error from server (Forbidden): ") || !strings.Contains(res.stderr, refusal) {
		t.Fatalf("third pod: exit %d, stdout %q, stderr %q; want exit 1 with %q", res.code, res.stdout, res.stderr, refusal)
	}

	must(t, c.kubectl(t, nil, "delete", "pod", "p1", "-n", "qa", "--wait=false"), `pod "p1" deleted`)
	waitUsed("1", "200m")
	res = c.kubectl(t, nil, "get", "quota", "compute", "-n", "qa", "-o", "yaml")
	for _, want := range []string{"  hard:\n    pods: \"2\"\n    requests.cpu: \"1\"\n", "  used:\n    pods: \"1\"\n    requests.cpu: 200m\n"} {
		if !strings.Contains(res.stdout, want) {
			t.Fatalf("kubectl get quota -o yaml: %q; want it to hold %q", res.stdout, want)
		}
	}
	must(t, createPod("p3"), "pod/p3 created")
	waitUsed("2", "400m")
}

// TestHelmCreatedChart_D15 installs, against `kubegate up --nodes 3`, the
// chart `helm create` writes, with its HorizontalPodAutoscaler and
// Ingress turned on (D.15), and waits for it as Helm does: the Deployment
// available and every object current.
func TestHelmCreatedChart_D15(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	bin := helmBinary(t)
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)

	helm := helmOn(t, bin, c)
	must(t, helm("create", "demo"), "Creating demo")
	res := helm("install", "demo", "./demo", "--set", "autoscaling.enabled=true", "--set", "ingress.enabled=true", "--wait", "--timeout=3m")
	for _, want := range []string{"NAME: demo\n", "STATUS: deployed\n", "REVISION: 1\n"} {
		if res.code != 0 || !strings.Contains(res.stdout, want) {
			t.Fatalf("helm install: exit %d, stdout %q, stderr %q; want success with %q", res.code, res.stdout, res.stderr, want)
		}
	}
	res = c.kubectl(t, nil, "get", "hpa,ingress", "--no-headers")
	var hpa, ing bool
	for _, line := range strings.Split(res.stdout, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && f[0] == "horizontalpodautoscaler.autoscaling/demo" && f[1] == "Deployment/demo":
			hpa = true
		case len(f) >= 4 && f[0] == "ingress.networking.k8s.io/demo" && f[2] == "chart-example.local":
			ing = true
		}
	}
	if res.code != 0 || !hpa || !ing {
		t.Fatalf("kubectl get hpa,ingress: exit %d, stdout %q, stderr %q; want the chart's HPA of Deployment/demo and Ingress for chart-example.local", res.code, res.stdout, res.stderr)
	}
	must(t, c.kubectl(t, nil, "get", "deployment", "demo", "-o", "jsonpath={.status.availableReplicas}"), "1")
}
