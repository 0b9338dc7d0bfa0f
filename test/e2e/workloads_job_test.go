package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// annotatePodTemplate sets annotations on the pod template of the object
// kubectl printed as JSON (a Job, or a CronJob's job template), and
// fields on the Job spec.
func annotatePodTemplate(t *testing.T, printed string, annotations map[string]string, jobSpec map[string]any) []byte {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(printed), &obj); err != nil {
		t.Fatalf("kubectl output %q: %v", printed, err)
	}
	spec := obj["spec"].(map[string]any)
	if jt, ok := spec["jobTemplate"].(map[string]any); ok {
		spec = jt["spec"].(map[string]any)
	}
	for k, v := range jobSpec {
		spec[k] = v
	}
	tpl := spec["template"].(map[string]any)
	meta, _ := tpl["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		tpl["metadata"] = meta
	}
	meta["annotations"] = annotations
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestJobsWithKubectl runs `kubegate up --nodes 3` and checks, with real
// kubectl, that a Job whose pods finish completes, that one whose pods
// fail fails after its backoffLimit, and that a CronJob every minute runs
// (docs/kubernetes-behaviour.md, G.6, G.7, G.13).
func TestJobsWithKubectl(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)

	t.Run("group", func(t *testing.T) {
		t.Run("a job whose pod exits 0 completes", func(t *testing.T) {
			t.Parallel()
			res := c.kubectl(t, nil, "create", "job", "ok", "--image=busybox", "--dry-run=client", "-o", "json")
			must(t, res, `"kind": "Job"`)
			job := annotatePodTemplate(t, res.stdout, map[string]string{"nodesim.kubegate.io/complete-after": "2s"}, nil)
			must(t, c.kubectl(t, job, "apply", "-f", "-"), "job.batch/ok created")
			must(t, c.kubectl(t, nil, "wait", "--for=condition=complete", "job/ok", "--timeout=60s"), "job.batch/ok condition met")
			res = c.kubectl(t, nil, "get", "job", "ok", "-o", "jsonpath={.status.succeeded} {.status.conditions[*].type}")
			must(t, res, "1 SuccessCriteriaMet Complete")
			res = c.kubectl(t, nil, "get", "pods", "-l", "batch.kubernetes.io/job-name=ok", "--no-headers")
			if f := strings.Fields(res.stdout); len(f) < 3 || f[1] != "0/1" || f[2] != "Completed" {
				t.Errorf("job ok's pods: %q, want one 0/1 Completed", res.stdout)
			}
			res = c.kubectl(t, nil, "get", "pods", "-l", "batch.kubernetes.io/job-name=ok", "-o", "jsonpath={.items[*].metadata.finalizers}")
			if strings.Contains(res.stdout, "job-tracking") {
				t.Errorf("a finished pod keeps the tracking finalizer: %q", res.stdout)
			}
		})

		t.Run("a job whose pods exit 1 fails after its backoffLimit", func(t *testing.T) {
			t.Parallel()
			res := c.kubectl(t, nil, "create", "job", "bad", "--image=busybox", "--dry-run=client", "-o", "json")
			must(t, res, `"kind": "Job"`)
			job := annotatePodTemplate(t, res.stdout, map[string]string{
				"nodesim.kubegate.io/complete-after": "1s", "nodesim.kubegate.io/exit-code": "1"}, map[string]any{"backoffLimit": 1})
			must(t, c.kubectl(t, job, "apply", "-f", "-"), "job.batch/bad created")
			// The second pod comes 10 s after the first fails (kube's backoff).
			must(t, c.kubectl(t, nil, "wait", "--for=condition=failed", "job/bad", "--timeout=90s"), "job.batch/bad condition met")
			res = c.kubectl(t, nil, "get", "job", "bad", "-o", `jsonpath={.status.failed} {.status.conditions[?(@.type=="Failed")].reason}`)
			must(t, res, "2 BackoffLimitExceeded")
			res = c.kubectl(t, nil, "get", "pods", "-l", "batch.kubernetes.io/job-name=bad", "--no-headers")
			if n := strings.Count(res.stdout, " Error "); n != 2 {
				t.Errorf("job bad's pods:\n%s\nwant 2 in Error", res.stdout)
			}
		})

		t.Run("a cronjob every minute runs", func(t *testing.T) {
			t.Parallel()
			res := c.kubectl(t, nil, "create", "cronjob", "tick", "--image=busybox", "--schedule=*/1 * * * *", "--dry-run=client", "-o", "json")
			must(t, res, `"kind": "CronJob"`)
			cj := annotatePodTemplate(t, res.stdout, map[string]string{"nodesim.kubegate.io/complete-after": "1s"}, nil)
			must(t, c.kubectl(t, cj, "apply", "-f", "-"), "cronjob.batch/tick created")
			// Up to a minute to the next one, and a margin.
			testwait.For(t, 100*time.Second, "a completed job of cronjob tick", func() (bool, string) {
				res := c.kubectl(t, nil, "get", "cronjob", "tick", "-o", "jsonpath={.status.lastScheduleTime} {.status.lastSuccessfulTime}")
				f := strings.Fields(res.stdout)
				return len(f) == 2, res.stdout + res.stderr
			})
			res = c.kubectl(t, nil, "get", "jobs", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.ownerReferences[0].name} {.metadata.annotations}{\"\\n\"}{end}")
			var found bool
			for _, line := range strings.Split(res.stdout, "\n") {
				if strings.HasPrefix(line, "tick-") && strings.Contains(line, " tick ") && strings.Contains(line, "cronjob-scheduled-timestamp") {
					found = true
				}
			}
			if !found {
				t.Errorf("no job tick-<minutes> owned by tick with its scheduled timestamp:\n%s", res.stdout)
			}
		})
	})
}
