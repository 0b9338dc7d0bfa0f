package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// drainPodYAML is a pod labelled app=web, placed on a node by name.
const drainPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels:
    app: web
spec:
  nodeName: %s
  containers:
  - name: web
    image: registry.example/web:1
`

const drainPDBYAML = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 3
  selector:
    matchLabels:
      app: web
`

// TestDrainHonoursDisruptionBudget runs `kubegate up --nodes 3` and drains
// a node with real kubectl: the node is cordoned, its pods are evicted as
// far as their PodDisruptionBudget allows, and the rest are refused with
// kube's message until the budget is gone (docs/kubernetes-behaviour.md
// D.9, G.12).
func TestDrainHonoursDisruptionBudget(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)

	testwait.For(t, 30*time.Second, "3 Ready nodes", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "nodes", "--no-headers")
		return strings.Count(res.stdout, " Ready ") == 3, res.stdout + res.stderr
	})
	// Two pods on node-1, one on each other node: four healthy pods, of
	// which the budget lets one go.
	for _, p := range [][2]string{{"web-a", "node-1"}, {"web-b", "node-1"}, {"web-c", "node-2"}, {"web-d", "node-3"}} {
		must(t, c.kubectl(t, []byte(fmt.Sprintf(drainPodYAML, p[0], p[1])), "create", "-f", "-"), "pod/"+p[0]+" created")
	}
	must(t, c.kubectl(t, nil, "wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=60s"), "condition met")
	must(t, c.kubectl(t, []byte(drainPDBYAML), "create", "-f", "-"), "poddisruptionbudget.policy/web created")
	testwait.For(t, 30*time.Second, "the budget allowing 1 disruption", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pdb", "web", "--no-headers")
		f := strings.Fields(res.stdout)
		return len(f) == 5 && f[1] == "3" && f[2] == "N/A" && f[3] == "1", res.stdout + res.stderr
	})

	res := c.kubectl(t, nil, "drain", "node-1", "--ignore-daemonsets", "--force", "--timeout=20s")
	t.Logf("kubectl drain node-1:\n%s%s", res.stdout, res.stderr)
	const refused = "Cannot evict pod as it would violate the pod's disruption budget."
	if res.code == 0 || !strings.Contains(res.stderr, refused) {
		t.Fatalf("drain node-1: exit %d, stdout %q, stderr %q; want a failure that says %q", res.code, res.stdout, res.stderr, refused)
	}
	for _, want := range []string{"node/node-1 cordoned", "evicting pod default/web-a", "evicting pod default/web-b"} {
		if !strings.Contains(res.stdout+res.stderr, want) {
			t.Errorf("drain node-1 does not say %q: stdout %q, stderr %q", want, res.stdout, res.stderr)
		}
	}
	must(t, c.kubectl(t, nil, "get", "node", "node-1", "-o", "jsonpath={.spec.unschedulable}"), "true")

	// Exactly one of node-1's pods went; the budget now allows none.
	testwait.For(t, 30*time.Second, "one pod left on node-1", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pods", "-l", "app=web", "--field-selector", "spec.nodeName=node-1", "--no-headers")
		return strings.Count(strings.TrimSpace(res.stdout), "\n") == 0 && strings.Contains(res.stdout, "web-"), res.stdout + res.stderr
	})
	testwait.For(t, 30*time.Second, "the budget allowing no disruption", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pdb", "web", "-o", "jsonpath={.status.currentHealthy} {.status.disruptionsAllowed}")
		return res.stdout == "3 0", res.stdout + res.stderr
	})

	// Without the budget the drain completes.
	must(t, c.kubectl(t, nil, "delete", "pdb", "web"), `poddisruptionbudget.policy "web" deleted`)
	must(t, c.kubectl(t, nil, "drain", "node-1", "--ignore-daemonsets", "--force", "--timeout=30s"), "node/node-1 drained")
	res = c.kubectl(t, nil, "get", "pods", "-l", "app=web", "--field-selector", "spec.nodeName=node-1", "--no-headers")
	if strings.Contains(res.stdout, "web-") {
		t.Errorf("pods left on the drained node-1: %q", res.stdout)
	}
}
