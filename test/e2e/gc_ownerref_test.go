package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// neverUID is the UID of an owner that never existed.
const neverUID = "00000000-0000-0000-0000-00000000c0de"

// ownedConfigMap is a config map named name whose ownerReferences are refs
// (YAML flow mappings).
func ownedConfigMap(name string, refs ...string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  ownerReferences: [%s]\n", name, strings.Join(refs, ", "))
}

func ownerRefYAML(apiVersion, kind, name, uid string) string {
	return fmt.Sprintf("{apiVersion: %s, kind: %s, name: %q, uid: %q}", apiVersion, kind, name, uid)
}

// uidsOf lists kind/name=uid of every object of kinds in namespace ns, in
// order.
func (c *upCluster) uidsOf(t *testing.T, ns, kinds string) []string {
	t.Helper()
	res := c.kubectl(t, nil, "-n", ns, "get", kinds, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.uid}{"\n"}{end}`)
	if res.code != 0 {
		t.Fatalf("get %s in %s: %s", kinds, ns, res.stderr)
	}
	lines := strings.Fields(res.stdout)
	slices.Sort(lines)
	return lines
}

// waitCollected waits until kind/name in ns is gone or being deleted.
func (c *upCluster) waitCollected(t *testing.T, conf, ns, kind, name string) {
	t.Helper()
	testwait.For(t, gcWait, ns+"/"+name+" collected", func() (bool, string) {
		res := c.kubectl(t, nil, "--kubeconfig", conf, "-n", ns, "get", kind, "--field-selector=metadata.name="+name,
			"-o", "jsonpath={range .items[*]}{.metadata.name}:{.metadata.deletionTimestamp}{end}")
		out := strings.TrimSpace(res.stdout)
		return res.code == 0 && (out == "" || !strings.HasSuffix(out, ":")), fmt.Sprintf("%q (stderr %q)", out, res.stderr)
	})
}

// gcDeletion is a line of the collector's log saying it deletes an object.
var gcDeletion = regexp.MustCompile(`deleting an object whose owners are gone.* namespace=(\S*) name=(\S+)`)

// A user who may edit in their own namespace and view another makes
// config maps whose ownerReferences carry the UIDs of the other
// namespace's Deployment and ReplicaSet and of a node, each with another
// name or kind. The collector deletes those config maps, whose owners are
// not there, and nothing outside the user's namespace: the ReplicaSet,
// its pods and the node leases keep their UIDs through the updates and
// renewals that follow (G.8).
func TestOwnerReferencesWithOtherCoordinatesDeleteNothingElsewhere_G8(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	dir := filepath.Join(t.TempDir(), "cluster")
	// --verbose: the collector logs each object it deletes.
	c := startUp(t, dir, 0, "--nodes", "2", "--verbose")
	files := t.TempDir()
	admin := filepath.Join(dir, "admin.conf")

	for _, ns := range []string{"prod", "mallory"} {
		must(t, c.kubectl(t, nil, "create", "namespace", ns), "namespace/"+ns+" created")
		c.waitKubectl(t, "the default service account of "+ns, "serviceaccount/default", "-n", ns, "get", "serviceaccount", "default", "-o", "name")
	}
	must(t, c.kubectl(t, nil, "-n", "prod", "create", "deployment", "web", "--image=registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest", "--replicas=2"),
		"deployment.apps/web created")
	c.waitKubectl(t, "web available", "2", "-n", "prod", "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}")

	mallory := filepath.Join(files, "mallory.conf")
	if res := kubegate(t, "kubeconfig", "create", "--dir", dir, "--user", "mallory", "--server", c.server, "--out", mallory); res.code != 0 {
		t.Fatalf("kubeconfig create: %+v", res)
	}
	must(t, c.kubectl(t, nil, "-n", "mallory", "create", "rolebinding", "mallory-edit", "--clusterrole=edit", "--user=mallory"), "created")
	must(t, c.kubectl(t, nil, "-n", "prod", "create", "rolebinding", "mallory-view", "--clusterrole=view", "--user=mallory"), "created")
	as := func(args ...string) result {
		t.Helper()
		return c.kubectl(t, nil, append([]string{"--kubeconfig", mallory}, args...)...)
	}
	testwait.For(t, 10*time.Second, "mallory's rights", func() (bool, string) {
		edit, view := as("-n", "mallory", "auth", "can-i", "create", "configmaps"), as("-n", "prod", "auth", "can-i", "get", "replicasets")
		return edit.code == 0 && view.code == 0, edit.stdout + view.stdout
	})
	if res := as("-n", "prod", "auth", "can-i", "delete", "replicasets"); strings.TrimSpace(res.stdout) != "no" {
		t.Fatalf("mallory may delete replica sets in prod: %q", res.stdout)
	}

	// What mallory reads with view; a node's UID is no secret either
	// (the admin reads it here, from its lease's owner).
	deployment := strings.TrimSpace(as("-n", "prod", "get", "deployment", "web", "-o", "jsonpath={.metadata.uid}").stdout)
	rs := strings.Fields(as("-n", "prod", "get", "replicasets", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name} {.items[0].metadata.uid}").stdout)
	lease := strings.Fields(c.kubectl(t, nil, "-n", "kube-node-lease", "get", "leases", "-o",
		"jsonpath={.items[0].metadata.ownerReferences[0].name} {.items[0].metadata.ownerReferences[0].uid}").stdout)
	if deployment == "" || len(rs) != 2 || len(lease) != 2 {
		t.Fatalf("read deployment %q, replica set %q, node %q", deployment, rs, lease)
	}
	wrong := map[string]string{
		"deployment-name": ownerRefYAML("apps/v1", "Deployment", "not-web", deployment),
		"deployment-node": ownerRefYAML("v1", "Node", "web", deployment),
		"replicaset-name": ownerRefYAML("apps/v1", "ReplicaSet", "not-"+rs[0], rs[1]),
		"replicaset-node": ownerRefYAML("v1", "Node", rs[0], rs[1]),
		"node-name":       ownerRefYAML("v1", "Node", "not-"+lease[0], lease[1]),
		"node-kind":       ownerRefYAML("v1", "Namespace", lease[0], lease[1]),
	}
	never := ownerRefYAML("v1", "ConfigMap", "never", neverUID)

	prodBefore := c.uidsOf(t, "prod", "deployments,replicasets,pods")
	leasesBefore := c.uidsOf(t, "kube-node-lease", "leases")
	poisons := map[string]bool{}
	// Each reference goes first beside one to an owner that never
	// existed, then alone.
	for round, with := range [][]string{{never}, nil} {
		for _, what := range slices.Sorted(maps.Keys(wrong)) {
			name := fmt.Sprintf("poison-%d-%s", round+1, what)
			poisons[name] = true
			file := filepath.Join(files, name+".yaml")
			writeFile(t, file, []byte(ownedConfigMap(name, append([]string{wrong[what]}, with...)...)))
			must(t, as("-n", "mallory", "create", "-f", file), "configmap/"+name+" created")
		}
		for _, what := range slices.Sorted(maps.Keys(wrong)) {
			c.waitCollected(t, mallory, "mallory", "configmap", fmt.Sprintf("poison-%d-%s", round+1, what))
		}

		// The real dependents change after the collector has handled
		// the config maps: the admin updates the deployment, its
		// replica set and pods, and every node renews its lease.
		versions := func() map[string]string {
			out := map[string]string{}
			res := c.kubectl(t, nil, "-n", "kube-node-lease", "get", "leases", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
			for _, l := range strings.Fields(res.stdout) {
				name, rv, _ := strings.Cut(l, "=")
				out[name] = rv
			}
			return out
		}
		leaseVersions := versions()
		touched := fmt.Sprintf("touched=%d", round+1)
		for _, args := range [][]string{{"annotate", "deployment", "web"}, {"annotate", "replicasets", "-l", "app=web"}, {"label", "pods", "-l", "app=web"}} {
			// an object gone in between shows in the UIDs below
			if res := c.kubectl(t, nil, append(append([]string{"-n", "prod"}, args...), touched, "--overwrite")...); res.code != 0 {
				t.Errorf("kubectl %s: %s", strings.Join(args, " "), res.stderr)
			}
		}
		// (a lease deleted meanwhile shows in the UIDs below)
		testwait.For(t, gcWait, "every node lease renewed", func() (bool, string) {
			now := versions()
			for name, rv := range leaseVersions {
				if now[name] == rv {
					return false, fmt.Sprintf("versions %v, were %v", now, leaseVersions)
				}
			}
			return true, ""
		})

		// Markers of each changed resource, whose owner never existed,
		// made after the changes: once they are collected, the
		// collector has looked at what came before them.
		markers := []struct{ ns, kind, manifest string }{
			{"prod", "configmap", ownedConfigMap("marker-%d", never)},
			{"prod", "replicaset", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: marker-%d\n  ownerReferences: [" +
				ownerRefYAML("apps/v1", "Deployment", "never", neverUID) + "]\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {app: marker}\n" +
				"  template:\n    metadata:\n      labels: {app: marker}\n    spec:\n      containers: [{name: app, image: registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest}]\n"},
			{"prod", "pod", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: marker-%d\n  ownerReferences: [" +
				ownerRefYAML("apps/v1", "ReplicaSet", "never", neverUID) + "]\nspec:\n  nodeSelector: {kubernetes.io/hostname: nowhere}\n" +
				"  containers: [{name: app, image: registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest}]\n"},
			{"kube-node-lease", "lease", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: marker-%d\n  ownerReferences: [" +
				ownerRefYAML("v1", "Node", "never", neverUID) + "]\n"},
		}
		for _, m := range markers {
			file := filepath.Join(files, fmt.Sprintf("marker-%d-%s.yaml", round+1, m.kind))
			writeFile(t, file, []byte(fmt.Sprintf(m.manifest, round+1)))
			must(t, c.kubectl(t, nil, "-n", m.ns, "create", "-f", file), "created")
		}
		for _, m := range markers {
			c.waitCollected(t, admin, m.ns, m.kind, fmt.Sprintf("marker-%d", round+1))
		}

		prodAfter := c.uidsOf(t, "prod", "deployments,replicasets,pods")
		prodAfter = slices.DeleteFunc(prodAfter, func(s string) bool { return strings.Contains(s, "/marker-") })
		if !slices.Equal(prodAfter, prodBefore) {
			t.Errorf("round %d: prod's deployment, replica set and pods were\n%s\nand are now\n%s", round+1, strings.Join(prodBefore, "\n"), strings.Join(prodAfter, "\n"))
		}
		leasesAfter := slices.DeleteFunc(c.uidsOf(t, "kube-node-lease", "leases"), func(s string) bool { return strings.Contains(s, "/marker-") })
		if !slices.Equal(leasesAfter, leasesBefore) {
			t.Errorf("round %d: the node leases were\n%s\nand are now\n%s", round+1, strings.Join(leasesBefore, "\n"), strings.Join(leasesAfter, "\n"))
		}
		if t.Failed() {
			break
		}
	}

	// The collector's log names every object it deleted: mallory's
	// config maps, and the markers, nothing else.
	logged := map[string]bool{}
	others, deletions := map[string]int{}, 0
	for _, m := range gcDeletion.FindAllStringSubmatch(c.stderr.String(), -1) {
		ns, name := m[1], m[2]
		logged[ns+"/"+name] = true
		if ns == "mallory" && poisons[name] || strings.HasPrefix(name, "marker-") {
			continue
		}
		others[ns+"/"+name]++
		deletions++
	}
	if deletions > 0 {
		var list []string
		for _, o := range slices.Sorted(maps.Keys(others)) {
			list = append(list, fmt.Sprintf("%s ×%d", o, others[o]))
		}
		if len(list) > 10 {
			list = append(list[:10], "…")
		}
		t.Errorf("the collector deleted %d objects outside mallory's namespace %d times: %s", len(others), deletions, strings.Join(list, ", "))
	}
	for name := range poisons {
		if !logged["mallory/"+name] {
			t.Errorf("the collector's log does not show mallory/%s deleted", name)
		}
	}
}
