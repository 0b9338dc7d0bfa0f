package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// totals maps node → TOTAL column of an explain table.
func totals(out string) map[string]string {
	m := map[string]string{}
	row := regexp.MustCompile(`(?m)^(node-\d)(?: \*)?\s.*\s(\d+)$`)
	for _, r := range row.FindAllStringSubmatch(out, -1) {
		m[r[1]] = r[2]
	}
	return m
}

// The example reproduces the three-node write-up: 290/280/290 visible
// under the old weights, decided by NodePreferAvoidPods ×10000; and the
// same nodes under the current weights.
func TestSchedulerExplainExample(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "scheduler")
	for _, tc := range []struct {
		profile string
		want    map[string]string
		pick    string
	}{
		{"profile-old.yaml", map[string]string{"node-1": "1000290", "node-2": "1000280", "node-3": "290"}, "node-1"},
		{"profile-current.yaml", map[string]string{"node-1": "590", "node-2": "580", "node-3": "590"}, "node-1"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "scheduler", "explain", "--nodes", filepath.Join(dir, "nodes.yaml"),
				"--pod", filepath.Join(dir, "pod.json"), "--config", filepath.Join(dir, tc.profile))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := totals(out)
			for n, w := range tc.want {
				if got[n] != w {
					t.Errorf("%s total %s, want %s\n%s", n, got[n], w, out)
				}
			}
			if !strings.Contains(out, "scheduled to "+tc.pick) {
				t.Errorf("want pick %s:\n%s", tc.pick, out)
			}
		})
	}
}

func TestSchedulerExplainErrors(t *testing.T) {
	dir := t.TempDir()
	nodes := filepath.Join(dir, "nodes.yaml")
	pod := filepath.Join(dir, "pod.json")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(nodes, []byte("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '10'}}\n"), 0o644)
	os.WriteFile(pod, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big"},"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"1000"}}}]}}`), 0o644)
	os.WriteFile(bad, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 200\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no input", []string{"scheduler", "explain"}, "give POD"},
		{"half offline", []string{"scheduler", "explain", "--nodes", nodes}, "needs both --nodes and --pod"},
		{"bad config", []string{"scheduler", "explain", "--nodes", nodes, "--pod", pod, "--config", bad}, "percentageOfNodesToScore 200: want 0 to 100"},
		{"nodes not a cluster", []string{"scheduler", "explain", "--nodes", pod, "--pod", pod}, "--nodes"},
		{"online without kubeconfig", []string{"scheduler", "explain", "app"}, "--kubeconfig is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code == 0 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want one line with %q", code, out, errOut, tc.want)
			}
		})
	}
	// Unschedulable offline: the table with the 0/N message, exit 0.
	code, out, _ := runCLI(t, "", "scheduler", "explain", "--nodes", nodes, "--pod", pod)
	if code != 0 || !strings.Contains(out, "0/1 nodes are available: 1 Insufficient cpu.") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
