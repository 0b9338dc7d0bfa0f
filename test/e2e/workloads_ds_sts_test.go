package e2e

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

const agentDaemonSetYAML = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels:
      app: agent
  template:
    metadata:
      labels:
        app: agent
    spec:
      containers:
      - name: agent
        image: registry.example/agent:1
`

const webStatefulSetYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  replicas: 3
  serviceName: web
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: registry.example/web:1
`

// TestDaemonSetAndStatefulSetWithKubectl runs `kubegate up --nodes 3` and
// checks with real kubectl that a DaemonSet gets one pod per node,
// including a node registered afterwards, and that a StatefulSet of 3
// makes web-0, web-1 and web-2 in that order and completes its rollout
// (docs/kubernetes-behaviour.md, G.4 and G.5).
func TestDaemonSetAndStatefulSetWithKubectl(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)
	testwait.For(t, 30*time.Second, "3 Ready nodes", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "nodes", "--no-headers")
		return strings.Count(res.stdout, " Ready ") == 3, res.stdout + res.stderr
	})

	t.Run("a DaemonSet runs one pod per node, and on a node added later", func(t *testing.T) {
		must(t, c.kubectl(t, []byte(agentDaemonSetYAML), "create", "-f", "-"), "daemonset.apps/agent created")
		podNodes := func() []string {
			res := c.kubectl(t, nil, "get", "pods", "-l", "app=agent", "-o", "jsonpath={range .items[*]}{.spec.nodeName}={.status.phase} {end}")
			f := strings.Fields(res.stdout)
			slices.Sort(f)
			return f
		}
		testwait.For(t, 60*time.Second, "an agent Running on each of node-1..3", func() (bool, string) {
			got := podNodes()
			return slices.Equal(got, []string{"node-1=Running", "node-2=Running", "node-3=Running"}), strings.Join(got, " ")
		})
		must(t, c.kubectl(t, nil, "rollout", "status", "ds/agent", "--timeout=60s"), "successfully rolled out")
		must(t, c.kubectl(t, nil, "get", "controllerrevisions", "-l", "app=agent"), "daemonset.apps/agent")

		// One more simulated node, registered by a second simulator.
		sim := exec.Command(kubegateBin, "nodes", "simulate", "--kubeconfig", filepath.Join(c.dir, "admin.conf"),
			"--count", "1", "--name-prefix", "extra-")
		simErr := &testwait.Buffer{}
		sim.Stderr = simErr
		if err := sim.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sim.Process.Kill(); _ = sim.Wait() }()
		testwait.For(t, 60*time.Second, "an agent Running on extra-1 too", func() (bool, string) {
			got := podNodes()
			return slices.Equal(got, []string{"extra-1=Running", "node-1=Running", "node-2=Running", "node-3=Running"}),
				strings.Join(got, " ") + "\nsimulator: " + simErr.String()
		})
		res := c.kubectl(t, nil, "get", "ds", "agent", "--no-headers")
		if f := strings.Fields(res.stdout); len(f) < 6 || f[1] != "4" || f[2] != "4" {
			t.Errorf("kubectl get ds: %q %q; want DESIRED and CURRENT 4", res.stdout, res.stderr)
		}
		// The extra node goes with its simulator, so that nothing more is
		// scheduled onto a node nobody runs.
		_ = sim.Process.Kill()
		must(t, c.kubectl(t, nil, "delete", "node", "extra-1"), "deleted")
	})

	t.Run("a DaemonSet rolls out a new image and back with its revisions", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "set", "image", "ds/agent", "agent=registry.example/agent:2"), "image updated")
		must(t, c.kubectl(t, nil, "rollout", "status", "ds/agent", "--timeout=90s"), "successfully rolled out")
		res := c.kubectl(t, nil, "rollout", "history", "ds/agent")
		if f := strings.Fields(res.stdout); !slices.Contains(f, "1") || !slices.Contains(f, "2") {
			t.Errorf("rollout history: %q %q; want revisions 1 and 2", res.stdout, res.stderr)
		}
		must(t, c.kubectl(t, nil, "rollout", "undo", "ds/agent"), "rolled back")
		must(t, c.kubectl(t, nil, "rollout", "status", "ds/agent", "--timeout=90s"), "successfully rolled out")
		testwait.For(t, 60*time.Second, "every agent on image 1 again", func() (bool, string) {
			res := c.kubectl(t, nil, "get", "pods", "-l", "app=agent", "--field-selector", "spec.nodeName!=extra-1",
				"-o", "jsonpath={range .items[*]}{.spec.containers[0].image} {end}")
			f := strings.Fields(res.stdout)
			return len(f) == 3 && strings.Count(res.stdout, "registry.example/agent:1") == 3, res.stdout + res.stderr
		})
	})

	t.Run("a StatefulSet makes web-0, web-1, web-2 in order", func(t *testing.T) {
		must(t, c.kubectl(t, []byte(webStatefulSetYAML), "create", "-f", "-"), "statefulset.apps/web created")
		must(t, c.kubectl(t, nil, "rollout", "status", "sts/web", "--timeout=90s"), "partitioned roll out complete")
		res := c.kubectl(t, nil, "get", "pods", "-l", "app=web", "--sort-by=.metadata.creationTimestamp",
			"-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}")
		if got := strings.TrimSpace(res.stdout); got != "web-0=Running web-1=Running web-2=Running" {
			t.Errorf("pods by creation: %q (%s)", got, res.stderr)
		}
		// Each was made once the one before was Running and Ready: its
		// creation is not before the previous pod's Ready transition.
		res = c.kubectl(t, nil, "get", "pods", "-l", "app=web", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.metadata.creationTimestamp} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\n"}{end}`)
		created, ready := map[string]string{}, map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				created[f[0]], ready[f[0]] = f[1], f[2]
			}
		}
		for _, pair := range [][2]string{{"web-0", "web-1"}, {"web-1", "web-2"}} {
			before, after := pair[0], pair[1]
			tb, err1 := time.Parse(time.RFC3339, ready[before])
			ta, err2 := time.Parse(time.RFC3339, created[after])
			if err1 != nil || err2 != nil || ta.Before(tb) {
				t.Errorf("%s created %s, before %s was Ready at %s (%v %v)", after, created[after], before, ready[before], err1, err2)
			}
		}
		must(t, c.kubectl(t, nil, "get", "pod", "web-1", "-o", "jsonpath={.spec.hostname}.{.spec.subdomain} {.metadata.labels}"),
			`web-1.web {"app":"web","apps.kubernetes.io/pod-index":"1","controller-revision-hash":"web-`)
	})
}
