package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

const webRSYAML = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 3
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

const legacyRCYAML = `apiVersion: v1
kind: ReplicationController
metadata:
  name: legacy
spec:
  replicas: 2
  selector:
    app: legacy
  template:
    metadata:
      labels:
        app: legacy
    spec:
      containers:
      - name: legacy
        image: registry.example/legacy:1
`

// ReplicaSets and ReplicationControllers get their pods from the
// controllers kubegate up runs, and kubectl scale changes them through the
// scale subresource (docs/kubernetes-behaviour.md, G.2).
func TestReplicaSetsWithKubectl_G2(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	files := t.TempDir()
	rsFile, rcFile := filepath.Join(files, "rs.yaml"), filepath.Join(files, "rc.yaml")
	writeFile(t, rsFile, []byte(webRSYAML))
	writeFile(t, rcFile, []byte(legacyRCYAML))

	// running waits until exactly n pods labelled app=app are Running and
	// none other is left.
	running := func(t *testing.T, app string, n int) {
		t.Helper()
		testwait.For(t, 60*time.Second, fmt.Sprintf("%d Running pods of %s", n, app), func() (bool, string) {
			res := c.kubectl(t, nil, "get", "pods", "-l", "app="+app, "--no-headers",
				"-o", "custom-columns=NAME:.metadata.name,PHASE:.status.phase,DELETING:.metadata.deletionTimestamp")
			lines := strings.Fields(strings.TrimSpace(res.stdout))
			if res.code != 0 || len(lines)%3 != 0 {
				return false, res.stdout + res.stderr
			}
			runningN := 0
			for i := 0; i < len(lines); i += 3 {
				if lines[i+1] != "Running" || lines[i+2] != "<none>" {
					return false, res.stdout
				}
				runningN++
			}
			return runningN == n, res.stdout
		})
	}

	must(t, c.kubectl(t, nil, "create", "-f", rsFile), "replicaset.apps/web created")
	running(t, "web", 3)
	testwait.For(t, 60*time.Second, "kubectl get rs", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "rs", "web")
		fields := strings.Fields(res.stdout)
		// NAME DESIRED CURRENT READY AGE, then the row.
		return res.code == 0 && len(fields) >= 10 && strings.Join(fields[:4], " ") == "NAME DESIRED CURRENT READY" &&
			strings.Join(fields[5:9], " ") == "web 3 3 3", res.stdout + res.stderr
	})
	res := c.kubectl(t, nil, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.ownerReferences[0].kind}")
	must(t, res, "ReplicaSet ReplicaSet ReplicaSet")

	testwait.For(t, 60*time.Second, "kubectl describe rs with its events", func() (bool, string) {
		res := c.kubectl(t, nil, "describe", "rs", "web")
		return res.code == 0 && strings.Contains(res.stdout, "Pods Status:  3 Running") &&
			strings.Contains(res.stdout, "SuccessfulCreate") && strings.Contains(res.stdout, "Created pod: web-"), res.stdout + res.stderr
	})

	must(t, c.kubectl(t, nil, "scale", "rs", "web", "--replicas=5"), "replicaset.apps/web scaled")
	running(t, "web", 5)
	must(t, c.kubectl(t, nil, "scale", "rs", "web", "--replicas=1"), "replicaset.apps/web scaled")
	running(t, "web", 1)
	must(t, c.kubectl(t, nil, "get", "events", "--field-selector", "reason=SuccessfulDelete", "-o", "jsonpath={.items[*].message}"),
		"Deleted pod: web-")
	testwait.For(t, 60*time.Second, "status replicas 1", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "rs", "web", "-o", "jsonpath={.status.replicas}/{.status.readyReplicas}")
		return res.stdout == "1/1", res.stdout + res.stderr
	})

	must(t, c.kubectl(t, nil, "create", "-f", rcFile), "replicationcontroller/legacy created")
	running(t, "legacy", 2)
	res = c.kubectl(t, nil, "get", "pods", "-l", "app=legacy", "-o", "jsonpath={.items[*].metadata.ownerReferences[0].kind}")
	must(t, res, "ReplicationController ReplicationController")
	must(t, c.kubectl(t, nil, "scale", "rc", "legacy", "--current-replicas=2", "--replicas=3"), "replicationcontroller/legacy scaled")
	running(t, "legacy", 3)

	res = c.kubectl(t, nil, "get", "events", "--field-selector", "reason=SuccessfulCreate", "-o", "jsonpath={.items[*].source.component}")
	for _, want := range []string{"replicaset-controller", "replication-controller"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("no SuccessfulCreate event from %s: %q %q", want, res.stdout, res.stderr)
		}
	}
}
