package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubegate/kubegate/controllers/clusterroleaggregation"
	"github.com/kubegate/kubegate/internal/testtool"
	"github.com/kubegate/kubegate/internal/testwait"
)

// The user's roles of TestAggregatedClusterRolesLikeKubeControllerManager:
// monitoring gathers the roles labelled for it, in two selectors, from
// two roles whose rules overlap, and a third that a later step unlabels.
const monitoringRoles = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring
aggregationRule:
  clusterRoleSelectors:
  - matchLabels:
      example.com/aggregate-to-monitoring: "true"
  - matchExpressions:
    - {key: example.com/monitoring-extra, operator: Exists}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring-workloads
  labels:
    example.com/aggregate-to-monitoring: "true"
rules:
- apiGroups: [""]
  resources: [pods, services, endpoints]
  verbs: [get, list, watch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring-nodes
  labels:
    example.com/aggregate-to-monitoring: "true"
rules:
- nonResourceURLs: [/metrics]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, services, endpoints]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [nodes]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: a-monitoring-extra
  labels:
    example.com/monitoring-extra: "yes"
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get]
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [dashboards]
  verbs: [get]
`

// TestAggregatedClusterRolesLikeKubeControllerManager holds kubegate's
// ClusterRole aggregation controller to kube-controller-manager's: on
// kube-apiserver with kube-controller-manager and on `kubegate up` (the
// controllers' comparison's clusters), `kubectl get clusterrole NAME -o
// yaml` shows the same admin, edit and view, rules in the same order and
// managedFields with the same managers, and the same for a user's
// aggregated role when it is created, hand-edited and when one of its
// roles loses its label (docs/kubernetes-behaviour.md G.18). Only uids,
// resourceVersions and times are normalized.
func TestAggregatedClusterRolesLikeKubeControllerManager_G18(t *testing.T) {
	testtool.Require(t, "kubectl")
	bin := requireOracle(t)
	kube := startKubeCluster(t, bin)
	kg := startKubegateCluster(t)
	clusters := []*cluster{kube, kg}

	// each runs step on one cluster, then on the other: the controllers
	// of both work meanwhile.
	each := func(step func(c *cluster) error) {
		t.Helper()
		for _, c := range clusters {
			if err := step(c); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
	}
	kubectl := func(c *cluster, stdin string, args ...string) error {
		code, out, errOut := c.kubectl(t, stdin, args...)
		if code != 0 {
			return fmt.Errorf("kubectl %s: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
		}
		return nil
	}
	compare := func(step string, names ...string) {
		t.Helper()
		for _, name := range names {
			var got []string
			each(func(c *cluster) error {
				code, out, errOut := c.kubectl(t, "", "get", "clusterrole", name, "-o", "yaml", "--show-managed-fields")
				if code != 0 {
					return fmt.Errorf("kubectl get clusterrole %s: exit %d: %s", name, code, errOut)
				}
				norm, err := normalizeClusterRole(out)
				got = append(got, norm)
				return err
			})
			t.Logf("%s: clusterrole %s on kube-apiserver with kube-controller-manager:\n%s", step, name, got[0])
			if diff := lineDiff(strings.Split(got[0], "\n"), strings.Split(got[1], "\n")); diff != "" {
				t.Logf("%s: clusterrole %s on kubegate:\n%s", step, name, got[1])
				t.Errorf("%s: clusterrole %s differs; - kube-controller-manager, + kubegate:\n%s", step, name, diff)
			}
		}
	}

	each(func(c *cluster) error { return aggregationSettled(t, c, "admin", "edit", "view") })
	compare("the default roles", "admin", "edit", "view",
		"system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view")

	each(func(c *cluster) error { return kubectl(c, monitoringRoles, "create", "-f", "-") })
	each(func(c *cluster) error { return aggregationSettled(t, c, "monitoring") })
	compare("monitoring created", "monitoring")

	each(func(c *cluster) error {
		return kubectl(c, "", "patch", "clusterrole", "monitoring", "--type=json",
			`-p=[{"op":"replace","path":"/rules","value":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}]`)
	})
	each(func(c *cluster) error { return aggregationSettled(t, c, "monitoring") })
	compare("monitoring's rules edited by hand", "monitoring")

	each(func(c *cluster) error {
		return kubectl(c, "", "label", "clusterrole", "monitoring-nodes", "example.com/aggregate-to-monitoring-")
	})
	each(func(c *cluster) error { return aggregationSettled(t, c, "monitoring") })
	compare("monitoring-nodes unlabelled", "monitoring")
}

// aggregationSettled waits until each of the ClusterRoles names is
// stored with the rules its aggregationRule gathers from the cluster's
// other roles, and has been for a second.
func aggregationSettled(t *testing.T, c *cluster, names ...string) error {
	t.Helper()
	var since time.Time
	var failed error
	testwait.For(t, 60*time.Second, c.name+": "+strings.Join(names, ", ")+" aggregated", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		list, err := c.client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		all := make([]*rbacv1.ClusterRole, len(list.Items))
		byName := map[string]*rbacv1.ClusterRole{}
		for i := range list.Items {
			all[i] = &list.Items[i]
			byName[all[i].Name] = all[i]
		}
		for _, name := range names {
			r := byName[name]
			if r == nil {
				since = time.Time{}
				return false, name + " is missing"
			}
			want, err := clusterroleaggregation.Rules(r, all)
			if err != nil {
				failed = err
				return true, ""
			}
			if len(want) == 0 || fmt.Sprint(want) != fmt.Sprint(r.Rules) {
				since = time.Time{}
				return false, fmt.Sprintf("%s has %d rules, its selectors gather %d", name, len(r.Rules), len(want))
			}
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= time.Second, "settled for " + time.Since(since).String()
	})
	return failed
}

// normalizeClusterRole returns the YAML of a ClusterRole without what
// each server generates: uid, resourceVersion, creationTimestamp and the
// managedFields' times.
func normalizeClusterRole(y string) (string, error) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(y), &obj); err != nil {
		return "", err
	}
	meta, _ := obj["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp"} {
		if _, ok := meta[k]; ok {
			meta[k] = "<" + k + ">"
		}
	}
	if mf, ok := meta["managedFields"].([]any); ok {
		for _, e := range mf {
			if m, ok := e.(map[string]any); ok {
				if _, ok := m["time"]; ok {
					m["time"] = "<time>"
				}
			}
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	out, err := yaml.JSONToYAML(b)
	return strings.TrimRight(string(out), "\n"), err
}
