package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

const gcWait = 60 * time.Second

// waitKubectl runs kubectl until its stdout (trimmed) is want.
func (c *upCluster) waitKubectl(t *testing.T, what, want string, args ...string) {
	t.Helper()
	testwait.For(t, gcWait, what, func() (bool, string) {
		res := c.kubectl(t, nil, args...)
		got := strings.TrimSpace(res.stdout)
		return got == want, fmt.Sprintf("%q (stderr %q)", got, strings.TrimSpace(res.stderr))
	})
}

const gcReplicaSet = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: %[1]s
spec:
  replicas: 0
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: app
        image: registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest
`

// gcPod is a pod owned by the ReplicaSet name with UID uid, but not
// controlled by it and outside its selector, so that a ReplicaSet
// controller leaves it alone and only the garbage collector acts on it.
const gcPod = `apiVersion: v1
kind: Pod
metadata:
  name: %[1]s-pod
  labels:
    app: %[1]s-pod
  ownerReferences:
  - apiVersion: apps/v1
    kind: ReplicaSet
    name: %[1]s
    uid: %[2]s
    blockOwnerDeletion: true
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest
`

// A deleted namespace shows Terminating, then is gone with everything in
// it; a ReplicaSet deleted with --cascade=orphan leaves its pods, with
// --cascade=foreground takes them first (G.8, G.9).
func TestGarbageCollectionAndNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0, "--nodes", "1")
	files := t.TempDir()

	t.Run("namespace delete", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "create", "namespace", "doomed"), "namespace/doomed created")
		must(t, c.kubectl(t, nil, "-n", "doomed", "create", "configmap", "settings", "--from-literal=a=b"), "configmap/settings created")
		// Pods are admitted once the serviceaccount controller has made the
		// namespace's default service account, as on kube (G.11).
		c.waitKubectl(t, "the default service account", "serviceaccount/default", "-n", "doomed", "get", "serviceaccount", "default", "-o", "name")
		must(t, c.kubectl(t, nil, "-n", "doomed", "run", "app", "--image=registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest"), "pod/app created")
		// a config map held by a finalizer keeps the namespace Terminating
		// until the test lets it go
		held := filepath.Join(files, "held.yaml")
		writeFile(t, held, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: doomed\n  finalizers: [example.com/hold]\n"))
		must(t, c.kubectl(t, nil, "create", "-f", held), "configmap/held created")
		c.waitKubectl(t, "the pod running", "Running", "-n", "doomed", "get", "pod", "app", "-o", "jsonpath={.status.phase}")

		must(t, c.kubectl(t, nil, "delete", "namespace", "doomed", "--wait=false"), `namespace "doomed" deleted`)
		must(t, c.kubectl(t, nil, "get", "namespace", "doomed"), "Terminating")
		res := c.kubectl(t, nil, "-n", "doomed", "create", "configmap", "late")
		if res.code == 0 || !strings.Contains(res.stderr, "unable to create new content in namespace doomed because it is being terminated") {
			t.Errorf("create in a Terminating namespace: exit %d, stderr %q", res.code, res.stderr)
		}
		c.waitKubectl(t, "the namespace's content deleted but the held config map", "held", "-n", "doomed", "get", "configmaps,pods",
			"-o", "jsonpath={range .items[*]}{.metadata.name}{end}")
		must(t, c.kubectl(t, nil, "get", "namespace", "doomed", "-o", "jsonpath={.status.conditions[?(@.type==\"NamespaceFinalizersRemaining\")].reason}"), "SomeFinalizerRemain")
		must(t, c.kubectl(t, nil, "-n", "doomed", "patch", "configmap", "held", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`), "patched")
		c.waitKubectl(t, "the namespace gone", "", "get", "namespaces", "--field-selector=metadata.name=doomed", "-o", "name")
	})

	replicaSet := func(t *testing.T, name string) {
		t.Helper()
		rs := filepath.Join(files, name+"-rs.yaml")
		writeFile(t, rs, []byte(fmt.Sprintf(gcReplicaSet, name)))
		must(t, c.kubectl(t, nil, "create", "-f", rs), "replicaset.apps/"+name+" created")
		uid := c.kubectl(t, nil, "get", "rs", name, "-o", "jsonpath={.metadata.uid}")
		pod := filepath.Join(files, name+"-pod.yaml")
		writeFile(t, pod, []byte(fmt.Sprintf(gcPod, name, uid.stdout)))
		must(t, c.kubectl(t, nil, "create", "-f", pod), "pod/"+name+"-pod created")
	}

	t.Run("cascade orphan", func(t *testing.T) {
		replicaSet(t, "kept")
		must(t, c.kubectl(t, nil, "delete", "rs", "kept", "--cascade=orphan"), `replicaset.apps "kept" deleted`)
		c.waitKubectl(t, "the ReplicaSet gone", "", "get", "rs", "--field-selector=metadata.name=kept", "-o", "name")
		c.waitKubectl(t, "the pod released", "kept-pod:", "get", "pod", "kept-pod", "-o", "jsonpath={.metadata.name}:{.metadata.ownerReferences}")
	})

	t.Run("cascade foreground", func(t *testing.T) {
		replicaSet(t, "fg")
		c.waitKubectl(t, "the pod running", "Running", "get", "pod", "fg-pod", "-o", "jsonpath={.status.phase}")
		must(t, c.kubectl(t, nil, "delete", "rs", "fg", "--cascade=foreground", "--wait=false"), `replicaset.apps "fg" deleted`)
		c.waitKubectl(t, "the pod gone", "", "get", "pods", "--field-selector=metadata.name=fg-pod", "-o", "name")
		c.waitKubectl(t, "the ReplicaSet gone", "", "get", "rs", "--field-selector=metadata.name=fg", "-o", "name")
	})

	t.Run("cascade background", func(t *testing.T) {
		replicaSet(t, "bg")
		must(t, c.kubectl(t, nil, "delete", "rs", "bg"), `replicaset.apps "bg" deleted`)
		c.waitKubectl(t, "the pod gone", "", "get", "pods", "--field-selector=metadata.name=bg-pod", "-o", "name")
	})
}
