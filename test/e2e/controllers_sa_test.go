package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

const saRSYAML = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: identity
spec:
  replicas: 2
  selector:
    matchLabels:
      app: identity
  template:
    metadata:
      labels:
        app: identity
    spec:
      containers:
      - name: web
        image: registry.example/web:1
`

// kubegate up runs each controller as its own service account in
// kube-system, which only its system:controller: role authorizes
// (docs/kubernetes-behaviour.md C.4 and G.15): without the role's binding
// the ReplicaSet controller is refused, as that service account, and with
// it back the pods are made.
func TestControllersRunAsTheirServiceAccounts_G15(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")

	accounts := []string{"node-controller", "daemon-set-controller", "statefulset-controller",
		"replicaset-controller", "replication-controller", "deployment-controller"}
	testwait.For(t, 60*time.Second, "the controllers' service accounts", func() (bool, string) {
		res := c.kubectl(t, nil, append([]string{"get", "serviceaccounts", "-n", "kube-system", "-o", "name"}, accounts...)...)
		return res.code == 0, res.stdout + res.stderr
	})

	const sa = "system:serviceaccount:kube-system:replicaset-controller"
	canI := func(verb, resource string) string {
		res := c.kubectl(t, nil, "auth", "can-i", verb, resource, "--as="+sa)
		return strings.TrimSpace(res.stdout)
	}
	if got := canI("create", "pods"); got != "yes" {
		t.Errorf("can-i create pods as %s = %q, want yes", sa, got)
	}
	for _, r := range []string{"secrets", "deployments.apps"} {
		if got := canI("create", r); got != "no" {
			t.Errorf("can-i create %s as %s = %q, want no", r, sa, got)
		}
	}

	const binding = "system:controller:replicaset-controller"
	must(t, c.kubectl(t, nil, "delete", "clusterrolebinding", binding), "deleted")
	if got := canI("create", "pods"); got != "no" {
		t.Fatalf("can-i create pods as %s without the binding = %q, want no", sa, got)
	}
	must(t, c.kubectl(t, []byte(saRSYAML), "apply", "-f", "-"), "created")
	const refused = `User \"` + sa + `\" cannot create resource \"pods\"`
	testwait.For(t, 60*time.Second, "the controller refused as its service account", func() (bool, string) {
		return strings.Contains(c.stderr.String(), refused), c.stderr.String()
	})
	if res := c.kubectl(t, nil, "get", "pods", "-l", "app=identity", "-o", "name"); res.code != 0 || strings.TrimSpace(res.stdout) != "" {
		t.Fatalf("pods without the binding: %q %q, want none", res.stdout, res.stderr)
	}

	must(t, c.kubectl(t, nil, "create", "clusterrolebinding", binding, "--clusterrole="+binding,
		"--serviceaccount=kube-system:replicaset-controller"), "created")
	testwait.For(t, 60*time.Second, "2 Running pods of the ReplicaSet", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pods", "-l", "app=identity", "--no-headers", "-o", "custom-columns=PHASE:.status.phase")
		return strings.Fields(res.stdout) != nil && strings.Join(strings.Fields(res.stdout), " ") == "Running Running", res.stdout + res.stderr
	})
	must(t, c.kubectl(t, nil, "get", "rs", "identity", "-o", "jsonpath={.status.readyReplicas}"), "2")
}
