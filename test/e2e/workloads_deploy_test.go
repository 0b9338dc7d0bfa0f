package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/internal/testwait"
)

const deployWait = 60 * time.Second

// availableSampler counts, every few milliseconds while it runs, the pods
// of app=app that are Ready and not being deleted, and keeps the lowest
// count seen.
type availableSampler struct {
	mu      sync.Mutex
	lowest  int
	samples int
	lastErr error
	stop    chan struct{}
	done    chan struct{}
}

func sampleAvailable(cs kubernetes.Interface, selector string) *availableSampler {
	s := &availableSampler{lowest: -1, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
			s.mu.Lock()
			if err != nil {
				s.lastErr = err
				s.mu.Unlock()
				continue
			}
			n := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					n++
				}
			}
			if s.lowest < 0 || n < s.lowest {
				s.lowest = n
			}
			s.samples++
			s.mu.Unlock()
		}
	}()
	return s
}

// finish stops the sampler and returns the lowest count and how many
// samples it took.
func (s *availableSampler) finish() (lowest, samples int, lastErr error) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lowest, s.samples, s.lastErr
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runningPods waits until app=app has exactly n pods, all Running with
// image, none terminating.
func runningPods(t *testing.T, c *upCluster, n int, image string) {
	t.Helper()
	testwait.For(t, deployWait, fmt.Sprintf("%d Running pods of %s", n, image), func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pods", "-l", "app=app", "--no-headers",
			"-o", "custom-columns=STATUS:.status.phase,DEL:.metadata.deletionTimestamp,IMAGE:.spec.containers[0].image")
		lines := strings.Fields(strings.TrimSpace(res.stdout))
		if len(lines) != 3*n {
			return false, res.stdout + res.stderr
		}
		for i := 0; i < len(lines); i += 3 {
			if lines[i] != "Running" || lines[i+1] != "<none>" || lines[i+2] != image {
				return false, res.stdout
			}
		}
		return true, ""
	})
}

// replicaSetsOf lists app=app's ReplicaSets as NAME=REVISION:REPLICAS,
// sorted by name.
func replicaSetsOf(t *testing.T, c *upCluster) []string {
	t.Helper()
	res := c.kubectl(t, nil, "get", "rs", "-l", "app=app", "--no-headers", "-o",
		`custom-columns=NAME:.metadata.name,REV:.metadata.annotations.deployment\.kubernetes\.io/revision,N:.spec.replicas`)
	if res.code != 0 {
		t.Fatalf("kubectl get rs: %s", res.stderr)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			out = append(out, f[0]+"="+f[1]+":"+f[2])
		}
	}
	sort.Strings(out)
	return out
}

// rolledOut runs kubectl rollout status and checks that it succeeds.
func rolledOut(t *testing.T, c *upCluster) {
	t.Helper()
	must(t, c.kubectl(t, nil, "rollout", "status", "deployment/app", "--timeout=60s"), `deployment "app" successfully rolled out`)
}

// TestDeploymentWithKubectl drives a Deployment through its life with real
// kubectl against `kubegate up --nodes 3` (docs/kubernetes-behaviour.md,
// G.3): created, rolled to a new image without ever having fewer than
// replicas - maxUnavailable pods available, rolled back, paused and
// resumed, restarted, scaled, exposed (EndpointSlices of its ready pods),
// and deleted with its ReplicaSets and pods.
func TestDeploymentWithKubectl(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)
	cs := clientset(t, c.dir, c.server)
	testwait.For(t, deployWait, "3 Ready nodes", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "nodes", "--no-headers")
		return strings.Count(res.stdout, " Ready ") == 3, res.stdout + res.stderr
	})

	must(t, c.kubectl(t, nil, "create", "deployment", "app", "--image=nginx:1", "--replicas=3"), "deployment.apps/app created")
	runningPods(t, c, 3, "nginx:1")
	rolledOut(t, c)
	first := replicaSetsOf(t, c)
	if len(first) != 1 || !strings.HasPrefix(first[0], "app-") || !strings.HasSuffix(first[0], "=1:3") {
		t.Fatalf("replica sets %v, want one app-HASH at revision 1 with 3 replicas", first)
	}
	firstName, _, _ := strings.Cut(first[0], "=")

	t.Run("kubectl get deploy shows READY UP-TO-DATE AVAILABLE AGE", func(t *testing.T) {
		res := c.kubectl(t, nil, "get", "deploy", "app")
		header := strings.Fields(strings.SplitN(res.stdout, "\n", 2)[0])
		if strings.Join(header, " ") != "NAME READY UP-TO-DATE AVAILABLE AGE" {
			t.Errorf("header %q", header)
		}
		must(t, res, "app")
		row := strings.Fields(strings.Split(strings.TrimSpace(res.stdout), "\n")[1])
		if len(row) != 5 || row[1] != "3/3" || row[2] != "3" || row[3] != "3" {
			t.Errorf("row %q, want app 3/3 3 3 AGE", row)
		}
	})

	t.Run("kubectl describe shows the new ReplicaSet, conditions and scaling event", func(t *testing.T) {
		testwait.For(t, deployWait, "describe deployment app", func() (bool, string) {
			res := c.kubectl(t, nil, "describe", "deployment", "app")
			words := strings.Join(strings.Fields(res.stdout), " ") // column widths vary between kubectl versions
			for _, want := range []string{
				"NewReplicaSet: " + firstName + " (3/3 replicas created)",
				"Available True MinimumReplicasAvailable",
				"Progressing True NewReplicaSetAvailable",
				"ScalingReplicaSet",
				"Scaled up replica set " + firstName + " from 0 to 3",
			} {
				if !strings.Contains(words, want) {
					return false, fmt.Sprintf("no %q in:\n%s%s", want, res.stdout, res.stderr)
				}
			}
			return true, ""
		})
	})

	t.Run("set image rolls out without dropping below replicas - maxUnavailable", func(t *testing.T) {
		// The default maxUnavailable, 25% of 3, rounds down to 0: all 3
		// must stay available throughout.
		sampler := sampleAvailable(cs, "app=app")
		must(t, c.kubectl(t, nil, "set", "image", "deployment/app", "nginx=nginx:2"), "deployment.apps/app image updated")
		rolledOut(t, c)
		runningPods(t, c, 3, "nginx:2")
		lowest, samples, err := sampler.finish()
		if samples < 10 {
			t.Fatalf("only %d samples of available pods (last error %v)", samples, err)
		}
		if lowest < 3 {
			t.Errorf("as few as %d pods were available during the rollout, want at least 3 (3 replicas, maxUnavailable 0)", lowest)
		}
		rss := replicaSetsOf(t, c)
		if len(rss) != 2 || !strings.Contains(strings.Join(rss, " "), firstName+"=1:0") {
			t.Errorf("replica sets %v, want %s at revision 1 scaled to 0 and a new one at revision 2", rss, firstName)
		}
	})

	t.Run("rollout history lists both revisions", func(t *testing.T) {
		res := c.kubectl(t, nil, "rollout", "history", "deployment/app")
		must(t, res, "REVISION")
		for _, rev := range []string{"\n1 ", "\n2 "} {
			if !strings.Contains(res.stdout, rev) {
				t.Errorf("history lacks revision %q:\n%s", strings.TrimSpace(rev), res.stdout)
			}
		}
	})

	t.Run("rollout undo brings the first ReplicaSet back as the newest revision", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "rollout", "undo", "deployment/app"), "deployment.apps/app rolled back")
		rolledOut(t, c)
		runningPods(t, c, 3, "nginx:1")
		rss := replicaSetsOf(t, c)
		if len(rss) != 2 || !strings.Contains(strings.Join(rss, " "), firstName+"=3:3") {
			t.Errorf("replica sets %v, want %s back at revision 3 with 3 replicas and no third", rss, firstName)
		}
		must(t, c.kubectl(t, nil, "get", "deploy", "app", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`), "3")
	})

	t.Run("pause holds a new template back; resume rolls it out", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "rollout", "pause", "deployment/app"), "deployment.apps/app paused")
		testwait.For(t, deployWait, "the DeploymentPaused condition", func() (bool, string) {
			res := c.kubectl(t, nil, "get", "deploy", "app", "-o", `jsonpath={.status.conditions[?(@.type=="Progressing")].reason}`)
			return res.stdout == "DeploymentPaused", res.stdout + res.stderr
		})
		must(t, c.kubectl(t, nil, "set", "image", "deployment/app", "nginx=nginx:3"), "deployment.apps/app image updated")
		testwait.For(t, deployWait, "the paused change observed", func() (bool, string) {
			res := c.kubectl(t, nil, "get", "deploy", "app", "-o", "jsonpath={.metadata.generation} {.status.observedGeneration}")
			f := strings.Fields(res.stdout)
			return len(f) == 2 && f[0] == f[1], res.stdout + res.stderr
		})
		if rss := replicaSetsOf(t, c); len(rss) != 2 {
			t.Errorf("replica sets %v while paused, want still 2", rss)
		}
		must(t, c.kubectl(t, nil, "rollout", "resume", "deployment/app"), "deployment.apps/app resumed")
		rolledOut(t, c)
		runningPods(t, c, 3, "nginx:3")
		if rss := replicaSetsOf(t, c); len(rss) != 3 {
			t.Errorf("replica sets %v after resuming, want 3", rss)
		}
	})

	t.Run("rollout restart makes a new ReplicaSet of the same image", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "rollout", "restart", "deployment/app"), "deployment.apps/app restarted")
		rolledOut(t, c)
		runningPods(t, c, 3, "nginx:3")
		if rss := replicaSetsOf(t, c); len(rss) != 4 || !strings.Contains(strings.Join(rss, " "), "=5:3") {
			t.Errorf("replica sets %v after the restart, want 4 with revision 5 at 3 replicas", rss)
		}
	})

	t.Run("scale to 5 and back to 3", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "scale", "deployment", "app", "--replicas=5"), "deployment.apps/app scaled")
		runningPods(t, c, 5, "nginx:3")
		testwait.For(t, deployWait, "5/5 ready", func() (bool, string) {
			res := c.kubectl(t, nil, "get", "deploy", "app", "--no-headers")
			f := strings.Fields(res.stdout)
			return len(f) == 5 && f[1] == "5/5" && f[2] == "5" && f[3] == "5", res.stdout
		})
		must(t, c.kubectl(t, nil, "scale", "deployment", "app", "--replicas=3"), "deployment.apps/app scaled")
		runningPods(t, c, 3, "nginx:3")
		rolledOut(t, c)
	})

	t.Run("expose gives a Service whose EndpointSlices hold the ready pods' IPs", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "expose", "deployment", "app", "--port=80", "--target-port=8080"), "service/app exposed")
		testwait.For(t, deployWait, "the slices list the 3 pods' IPs", func() (bool, string) {
			pods := c.kubectl(t, nil, "get", "pods", "-l", "app=app", "--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].status.podIP}")
			slices := c.kubectl(t, nil, "get", "endpointslices", "-l", "kubernetes.io/service-name=app", "-o",
				"jsonpath={.items[*].endpoints[?(@.conditions.ready==true)].addresses[0]}")
			want, got := strings.Fields(pods.stdout), strings.Fields(slices.stdout)
			sort.Strings(want)
			sort.Strings(got)
			return len(want) == 3 && strings.Join(got, " ") == strings.Join(want, " "), "pods " + pods.stdout + " slices " + slices.stdout + slices.stderr
		})
		must(t, c.kubectl(t, nil, "get", "endpointslices", "-l", "kubernetes.io/service-name=app", "-o", "jsonpath={.items[0].ports[0].port}"), "8080")
	})

	t.Run("delete takes its ReplicaSets and pods with it", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "delete", "deployment", "app"), `deployment.apps "app" deleted`)
		testwait.For(t, deployWait, "no ReplicaSets or pods of app left", func() (bool, string) {
			res := c.kubectl(t, nil, "get", "rs,pods", "-l", "app=app", "--no-headers")
			return res.code == 0 && strings.TrimSpace(res.stdout) == "", res.stdout + res.stderr
		})
	})
}
