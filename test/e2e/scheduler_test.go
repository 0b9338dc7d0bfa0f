package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// TestSchedulingWithKubectl runs `kubegate up --nodes 3` and checks, with
// real kubectl, that pods are placed on the simulated nodes, turn Running,
// carry their explanation, and that impossible requests and tainted nodes
// are handled as kube-scheduler handles them.
func TestSchedulingWithKubectl(t *testing.T) {
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)

	testwait.For(t, 10*time.Second, "3 Ready nodes", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "nodes", "--no-headers")
		return strings.Count(res.stdout, " Ready ") == 3, res.stdout + res.stderr
	})

	t.Run("the app pod gets a node and turns Running", func(t *testing.T) {
		must(t, c.kubectl(t, []byte(appPodYAML), "create", "-f", "-"), "pod/app created")
		testwait.For(t, 10*time.Second, "app Running on a node", func() (bool, string) {
			res := c.kubectl(t, nil, "get", "pod", "app", "-o", "wide", "--no-headers")
			f := strings.Fields(res.stdout)
			return len(f) >= 7 && f[2] == "Running" && strings.HasPrefix(f[6], "node-"), res.stdout + res.stderr
		})
	})

	t.Run("scheduler explain lists every node with per-plugin scores", func(t *testing.T) {
		res := kubegate(t, "scheduler", "explain", "app", "-n", "default", "--kubeconfig", filepath.Join(c.dir, "admin.conf"))
		if res.code != 0 {
			t.Fatalf("explain: %+v", res)
		}
		for _, want := range []string{"node-1", "node-2", "node-3", "NodeResourcesFit", "TaintToleration"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("explain output lacks %q:\n%s", want, res.stdout)
			}
		}
	})

	t.Run("1000 CPUs stays Pending with the 0/3 message", func(t *testing.T) {
		huge := strings.Replace(strings.Replace(appPodYAML, "name: app\n", "name: huge\n", 1),
			"    ports:\n", "    resources:\n      requests:\n        cpu: \"1000\"\n    ports:\n", 1)
		must(t, c.kubectl(t, []byte(huge), "create", "-f", "-"), "pod/huge created")
		testwait.For(t, 10*time.Second, "FailedScheduling on huge", func() (bool, string) {
			res := c.kubectl(t, nil, "describe", "pod", "huge")
			return strings.Contains(res.stdout, "0/3 nodes are available") && strings.Contains(res.stdout, "Insufficient cpu"), res.stdout
		})
		must(t, c.kubectl(t, nil, "get", "pod", "huge", "--no-headers"), "Pending")
	})

	t.Run("a NoSchedule taint keeps new pods off the node", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "taint", "nodes", "node-1", "dedicated=gpu:NoSchedule"), "node/node-1 tainted")
		for _, name := range []string{"t1", "t2", "t3", "t4", "t5", "t6"} {
			pod := strings.Replace(appPodYAML, "name: app\n", "name: "+name+"\n", 1)
			must(t, c.kubectl(t, []byte(pod), "create", "-f", "-"), "pod/"+name+" created")
		}
		testwait.For(t, 10*time.Second, "six pods bound", func() (bool, string) {
			res := c.kubectl(t, nil, "get", "pods", "-l", "app=app", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName", "--no-headers")
			bound := 0
			for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
				f := strings.Fields(line)
				if len(f) == 2 && strings.HasPrefix(f[0], "t") && f[1] != "<none>" {
					if f[1] == "node-1" {
						t.Fatalf("pod %s was placed on the tainted node-1", f[0])
					}
					bound++
				}
			}
			return bound == 6, res.stdout
		})
	})
}
