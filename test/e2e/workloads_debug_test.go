package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// resizePodYAML is a Burstable pod.
const resizePodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: sized
spec:
  containers:
  - name: app
    image: registry.example/app:1
    resources:
      requests:
        cpu: 100m
`

// TestDebugAddsAnEphemeralContainer runs `kubegate up --nodes 3` and real
// kubectl: `kubectl debug` adds an ephemeral container through
// pods/ephemeralcontainers, the simulated node reports it running, a
// removal is refused, `kubectl patch
// --subresource resize` changes a container's cpu in place, and a pod's
// proxy answers kube's 503 (docs/kubernetes-behaviour.md D.9, G.13).
func TestDebugAddsAnEphemeralContainer(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)

	must(t, c.kubectl(t, []byte(appPodYAML), "create", "-f", "-"), "pod/app created")
	must(t, c.kubectl(t, nil, "wait", "--for=condition=Ready", "pod/app", "--timeout=60s"), "condition met")

	res := c.kubectl(t, nil, "debug", "app", "--image=busybox", "-c", "debugger", "--target=app")
	if res.code != 0 {
		t.Fatalf("kubectl debug: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	must(t, c.kubectl(t, nil, "get", "pod", "app", "-o", "jsonpath={.spec.ephemeralContainers[*].name}/{.spec.ephemeralContainers[*].targetContainerName}"), "debugger/app")
	testwait.For(t, 30*time.Second, "the ephemeral container running", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pod", "app", "-o", "jsonpath={.status.ephemeralContainerStatuses[*].name}={.status.ephemeralContainerStatuses[*].state.running.startedAt}")
		name, started, _ := strings.Cut(res.stdout, "=")
		return name == "debugger" && started != "", res.stdout + res.stderr
	})

	res = c.kubectl(t, nil, "patch", "pod", "app", "--subresource", "ephemeralcontainers", "--type=json", "-p", `[{"op":"remove","path":"/spec/ephemeralContainers/0"}]`)
	if res.code == 0 || !strings.Contains(res.stderr, `existing ephemeral containers "debugger" may not be removed`) {
		t.Errorf("removing the debugger: exit %d, stderr %q; want kube's 422", res.code, res.stderr)
	}

	// A resize that would make a BestEffort pod Burstable is refused; one
	// that keeps the class is applied.
	res = c.kubectl(t, nil, "patch", "pod", "app", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m"}}}]}}`)
	if res.code == 0 || !strings.Contains(res.stderr, "Pod QOS Class may not change as a result of resizing") {
		t.Errorf("resizing a BestEffort pod: exit %d, stderr %q; want kube's 422", res.code, res.stderr)
	}
	must(t, c.kubectl(t, []byte(resizePodYAML), "create", "-f", "-"), "pod/sized created")
	must(t, c.kubectl(t, nil, "wait", "--for=condition=Ready", "pod/sized", "--timeout=60s"), "condition met")
	must(t, c.kubectl(t, nil, "patch", "pod", "sized", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m"}}}]}}`), "pod/sized patched")
	testwait.For(t, 30*time.Second, "the resize applied", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pod", "sized", "-o", "jsonpath={.spec.containers[0].resources.requests.cpu}/{.status.containerStatuses[0].resources.requests.cpu}")
		return res.stdout == "200m/200m", res.stdout + res.stderr
	})

	res = c.kubectl(t, nil, "get", "--raw", "/api/v1/namespaces/default/pods/app/proxy/healthz")
	if res.code == 0 || !strings.Contains(res.stderr, "ServiceUnavailable") && !strings.Contains(res.stderr, "error trying to reach service") {
		t.Errorf("GET the pod's proxy: exit %d, stdout %q, stderr %q; want kube's 503", res.code, res.stdout, res.stderr)
	}
}
