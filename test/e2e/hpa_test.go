package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// cpuUsageAnnotation is the simulated metrics server's per-pod CPU usage
// (docs/kubernetes-behaviour.md, I.4).
const cpuUsageAnnotation = "nodesim.kubegate.io/cpu-usage"

const hpaYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 6
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]
`

// TestHorizontalPodAutoscalerScalesADeployment_G19: busy pods scale the
// Deployment up; idle ones bring it back to minReplicas once the
// shortened downscale stabilization window has passed.
func TestHorizontalPodAutoscalerScalesADeployment_G19(t *testing.T) {
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "1",
		"--horizontal-pod-autoscaler-sync-period", "1s", "--horizontal-pod-autoscaler-downscale-stabilization", "10s",
		"--horizontal-pod-autoscaler-cpu-initialization-period", "1s")
	defer c.stop(t)
	must(t, c.kubectl(t, []byte(hpaYAML), "apply", "-f", "-"), "horizontalpodautoscaler.autoscaling/web created")
	replicas := func() (int, string) {
		res := c.kubectl(t, nil, "get", "deployment", "web", "-o", "jsonpath={.spec.replicas}")
		n, err := strconv.Atoi(strings.TrimSpace(res.stdout))
		if err != nil {
			return -1, res.stdout + res.stderr
		}
		return n, "spec.replicas " + res.stdout
	}
	testwait.For(t, 60*time.Second, "two pods with metrics", func() (bool, string) {
		res := c.kubectl(t, nil, "top", "pods", "-l", "app=web", "--no-headers")
		return res.code == 0 && strings.Count(strings.TrimSpace(res.stdout), "\n") == 1, res.stdout + res.stderr
	})
	// 400m used of 100m requested, against 50%: up, at least to 4.
	must(t, c.kubectl(t, nil, "annotate", "pods", "-l", "app=web", "--overwrite", cpuUsageAnnotation+"=400m"), "annotated")
	testwait.For(t, 90*time.Second, "scaled up to at least 4", func() (bool, string) {
		n, seen := replicas()
		return n >= 4, seen
	})
	must(t, c.kubectl(t, nil, "get", "events", "--field-selector", "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale"),
		"reason: cpu resource utilization (percentage of request) above target")
	// Idle (new pods too): back to minReplicas after the 10 s window.
	testwait.For(t, 120*time.Second, "scaled back down to 2", func() (bool, string) {
		res := c.kubectl(t, nil, "annotate", "pods", "-l", "app=web", "--overwrite", cpuUsageAnnotation+"=1m")
		n, seen := replicas()
		return n == 2, seen + res.stderr
	})
	must(t, c.kubectl(t, nil, "get", "events", "--field-selector", "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale"),
		"New size: 2; reason: All metrics below target")
}
