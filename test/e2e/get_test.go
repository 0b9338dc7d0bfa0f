package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const getObjectsYAML = `apiVersion: v1
kind: Namespace
metadata: {name: t}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty, namespace: t}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: three, namespace: t}
data: {a: "1", b: "2"}
binaryData: {c: "AAE="}
---
apiVersion: v1
kind: Service
metadata: {name: np, namespace: t}
spec:
  type: NodePort
  selector: {app: web}
  clusterIP: 10.96.0.50
  ports: [{name: http, port: 80, nodePort: 30080}, {name: dns, port: 53, protocol: UDP, nodePort: 30053}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: everyone, namespace: t}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}
- {kind: Group, name: devs, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: robot, namespace: t}
`

// ages are the AGE cells, which differ from run to run.
var ages = regexp.MustCompile(`\b\d+s\b`)

// cells is text with its ages replaced and its columns separated by one
// space: the widths follow the ages.
func cells(text string) string {
	var lines []string
	for _, l := range strings.Split(ages.ReplaceAllString(text, "AGE"), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

// TestKubectlGetColumns checks what kubectl get prints, as it printed it
// against a kube-apiserver v1.37.2 for the same objects (the ages aside).
func TestKubectlGetColumns(t *testing.T) {
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0)
	objects := filepath.Join(t.TempDir(), "objects.yaml")
	writeFile(t, objects, []byte(getObjectsYAML))
	must(t, c.kubectl(t, nil, "apply", "-f", objects), "configmap/three created")
	// The root CA publisher gives every namespace its kube-root-ca.crt,
	// as kube-controller-manager does (G.16).
	c.waitKubectl(t, "kube-root-ca.crt in t", "configmap/kube-root-ca.crt", "-n", "t", "get", "configmap", "kube-root-ca.crt", "-o", "name")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "configmaps", "-n", "t"}, `
NAME               DATA   AGE
empty              0      AGE
kube-root-ca.crt   1      AGE
three              3      AGE
`},
		{[]string{"get", "services", "-n", "t", "-o", "wide"}, `
NAME   TYPE       CLUSTER-IP   EXTERNAL-IP   PORT(S)                     AGE   SELECTOR
np     NodePort   10.96.0.50   <none>        80:30080/TCP,53:30053/UDP   AGE   app=web
`},
		{[]string{"get", "rolebindings", "-n", "t", "-o", "wide"}, `
NAME       ROLE               AGE   USERS   GROUPS   SERVICEACCOUNTS
everyone   ClusterRole/view   AGE   alice   devs     t/robot
`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := c.kubectl(t, nil, tc.args...)
			if res.code != 0 {
				t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
			}
			if got, want := cells(res.stdout), cells(strings.TrimPrefix(tc.want, "\n")); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// sortObjectsYAML are pods created out of the order of their names and of
// their rank labels, and events whose last times are not in the order of
// their names, %[1]s and %[2]s being 20 and 10 hours ago.
const sortObjectsYAML = `apiVersion: v1
kind: Pod
metadata: {name: c, namespace: s, labels: {rank: "1"}}
spec: {containers: [{name: app, image: registry.example/app:1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: s, labels: {rank: "2"}}
spec: {containers: [{name: app, image: registry.example/app:1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: s, labels: {rank: "3"}}
spec: {containers: [{name: app, image: registry.example/app:1}]}
---
apiVersion: v1
kind: Event
metadata: {name: z-old, namespace: s}
involvedObject: {kind: Pod, namespace: s, name: a}
reason: Older
message: first
type: Normal
source: {component: e2e}
firstTimestamp: "%[1]s"
lastTimestamp: "%[1]s"
count: 1
---
apiVersion: v1
kind: Event
metadata: {name: a-new, namespace: s}
involvedObject: {kind: Pod, namespace: s, name: b}
reason: Newer
message: second
type: Warning
source: {component: e2e}
firstTimestamp: "%[2]s"
lastTimestamp: "%[2]s"
count: 1
`

// TestKubectlGetSortBy_B5 runs kubectl get --sort-by, which asks for a
// Table with includeObject=Object and sorts its rows by the objects in
// them: the rows come in the order of the field sorted by, with the wide
// pod columns and the event columns, not the NAME and AGE kubectl falls
// back to when it cannot decode those objects.
func TestKubectlGetSortBy_B5(t *testing.T) {
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0)
	must(t, c.kubectl(t, nil, "create", "namespace", "s"), "namespace/s created")
	// The ServiceAccount admission plugin needs the namespace's default
	// service account, which the ServiceAccount controller makes (G.11).
	c.waitKubectl(t, "the default service account in s", "serviceaccount/default", "-n", "s", "get", "serviceaccount", "default", "-o", "name")
	now := time.Now().UTC()
	objects := filepath.Join(t.TempDir(), "objects.yaml")
	writeFile(t, objects, []byte(fmt.Sprintf(sortObjectsYAML,
		now.Add(-20*time.Hour).Format(time.RFC3339), now.Add(-10*time.Hour).Format(time.RFC3339))))
	must(t, c.kubectl(t, nil, "apply", "-f", objects), "pod/c created")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods", "-n", "s", "-o", "wide", "--sort-by=.metadata.name"}, `
NAME   READY   STATUS    RESTARTS   AGE   IP       NODE     NOMINATED NODE   READINESS GATES
a      0/1     Pending   0          AGE   <none>   <none>   <none>           <none>
b      0/1     Pending   0          AGE   <none>   <none>   <none>           <none>
c      0/1     Pending   0          AGE   <none>   <none>   <none>           <none>
`},
		{[]string{"get", "pods", "-n", "s", "--sort-by=.metadata.labels.rank"}, `
NAME   READY   STATUS    RESTARTS   AGE
c      0/1     Pending   0          AGE
a      0/1     Pending   0          AGE
b      0/1     Pending   0          AGE
`},
		{[]string{"get", "events", "-n", "s", "--sort-by=.lastTimestamp"}, `
LAST SEEN   TYPE      REASON   OBJECT   MESSAGE
20h         Normal    Older    pod/a    first
10h         Warning   Newer    pod/b    second
`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := c.kubectl(t, nil, tc.args...)
			if res.code != 0 {
				t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
			}
			if got, want := cells(res.stdout), cells(strings.TrimPrefix(tc.want, "\n")); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}
