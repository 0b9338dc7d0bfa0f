package e2e

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

const dbStatefulSetYAML = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 3
  serviceName: db
  selector:
    matchLabels:
      app: db
  template:
    metadata:
      labels:
        app: db
    spec:
      containers:
      - name: db
        image: registry.example/db:1
        volumeMounts:
        - name: data
          mountPath: /var/lib/db
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: ["ReadWriteOnce"]
      resources:
        requests:
          storage: 1Gi
`

const volumeWait = 120 * time.Second

// TestStatefulSetVolumesWithKubectl runs `kubegate up --nodes 3` and
// checks with real kubectl that a StatefulSet's claims are provisioned by
// the default class and bound, each volume pinned to its pod's node; that
// the claims outlive a scale down and are used again by the same pods;
// that a claim grows when asked; and that an unused claim's deletion
// deletes its volume (docs/kubernetes-behaviour.md, G.20 and E.7).
func TestStatefulSetVolumesWithKubectl_G20(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)
	testwait.For(t, 30*time.Second, "the default StorageClass", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "storageclass", "--no-headers")
		return strings.Contains(res.stdout, "standard (default)") && strings.Contains(res.stdout, "kubegate.io/simulated") &&
			strings.Contains(res.stdout, "WaitForFirstConsumer"), res.stdout + res.stderr
	})
	must(t, c.kubectl(t, []byte(dbStatefulSetYAML), "create", "-f", "-"), "statefulset.apps/db created")
	must(t, c.kubectl(t, nil, "rollout", "status", "sts/db", "--timeout=120s"), "partitioned roll out complete")

	claims := func() string {
		return c.kubectl(t, nil, "get", "pvc", "-l", "app=db", "--sort-by=.metadata.name", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.phase}={.metadata.uid} {end}`).stdout
	}
	var before string
	testwait.For(t, volumeWait, "3 Bound claims", func() (bool, string) {
		before = claims()
		return strings.Count(before, "=Bound=") == 3, before
	})
	res := c.kubectl(t, nil, "get", "pv", "--no-headers")
	if strings.Count(res.stdout, "\n") != 3 {
		t.Fatalf("kubectl get pv: want 3 volumes, got:\n%s%s", res.stdout, res.stderr)
	}
	for _, want := range []string{"Bound", "default/data-db-0", "standard", "Delete"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("kubectl get pv lacks %q:\n%s", want, res.stdout)
		}
	}
	// Each volume is pinned to the node its pod was scheduled to.
	placement := func() []string {
		pods := c.kubectl(t, nil, "get", "pods", "-l", "app=db", "-o", `jsonpath={range .items[*]}{.metadata.name}@{.spec.nodeName} {end}`).stdout
		vols := c.kubectl(t, nil, "get", "pv", "-o",
			`jsonpath={range .items[*]}{.spec.claimRef.name}@{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]} {end}`).stdout
		p, v := strings.Fields(pods), strings.Fields(vols)
		for i := range v {
			v[i] = strings.TrimPrefix(v[i], "data-")
		}
		sort.Strings(p)
		sort.Strings(v)
		return []string{strings.Join(p, " "), strings.Join(v, " ")}
	}
	if got := placement(); got[0] != got[1] {
		t.Errorf("pods on %q, their volumes pinned to %q", got[0], got[1])
	}

	// Scale down and up: the same claims, the same pods on the same nodes.
	must(t, c.kubectl(t, nil, "scale", "sts/db", "--replicas=1"), "scaled")
	testwait.For(t, volumeWait, "1 pod left", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pods", "-l", "app=db", "--no-headers")
		return strings.Count(res.stdout, "\n") == 1, res.stdout
	})
	if got := claims(); got != before {
		t.Errorf("claims after scaling to 1:\n%s\nwant\n%s", got, before)
	}
	must(t, c.kubectl(t, nil, "scale", "sts/db", "--replicas=3"), "scaled")
	must(t, c.kubectl(t, nil, "rollout", "status", "sts/db", "--timeout=120s"), "partitioned roll out complete")
	if got := claims(); got != before {
		t.Errorf("claims after scaling back to 3:\n%s\nwant\n%s", got, before)
	}
	if got := placement(); got[0] != got[1] {
		t.Errorf("after scaling back, pods on %q, their volumes pinned to %q", got[0], got[1])
	}

	// Expansion.
	must(t, c.kubectl(t, nil, "patch", "pvc", "data-db-0", "-p", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`), "patched")
	testwait.For(t, volumeWait, "data-db-0 grown to 2Gi", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pvc", "data-db-0", "-o", "jsonpath={.status.capacity.storage} {.spec.volumeName}")
		f := strings.Fields(res.stdout)
		if len(f) != 2 || f[0] != "2Gi" {
			return false, res.stdout + res.stderr
		}
		pv := c.kubectl(t, nil, "get", "pv", f[1], "-o", "jsonpath={.spec.capacity.storage}")
		return pv.stdout == "2Gi", "volume capacity " + pv.stdout
	})

	// An unused claim deleted: its volume goes too.
	must(t, c.kubectl(t, nil, "scale", "sts/db", "--replicas=2"), "scaled")
	volume := strings.TrimSpace(c.kubectl(t, nil, "get", "pvc", "data-db-2", "-o", "jsonpath={.spec.volumeName}").stdout)
	if volume == "" {
		t.Fatal("data-db-2 has no volume")
	}
	testwait.For(t, volumeWait, "db-2 gone", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pod", "db-2", "--ignore-not-found", "--no-headers")
		return res.code == 0 && strings.TrimSpace(res.stdout) == "", res.stdout + res.stderr
	})
	must(t, c.kubectl(t, nil, "delete", "pvc", "data-db-2"), `persistentvolumeclaim "data-db-2" deleted`)
	testwait.For(t, volumeWait, "volume "+volume+" deleted", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pv", volume, "--ignore-not-found", "--no-headers")
		return res.code == 0 && strings.TrimSpace(res.stdout) == "", res.stdout + res.stderr
	})
	if got := c.kubectl(t, nil, "get", "pv", "--no-headers").stdout; strings.Count(got, "\n") != 2 {
		t.Errorf("kubectl get pv after the deletion: want 2 volumes, got:\n%s", got)
	}
}
