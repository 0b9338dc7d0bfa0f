package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/internal/testwait"
)

func TestControllersRefuseBadFlags(t *testing.T) {
	t.Parallel()
	res := kubegate(t, "controllers", "--kubeconfig", "x.conf", "--controllers", "*,nosuch")
	if res.code != 2 || strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, `"nosuch" is not a controller`) {
		t.Errorf("got exit %d stderr %q, want exit 2 and one line naming nosuch", res.code, res.stderr)
	}
	res = kubegate(t, "controllers")
	if res.code == 0 || !strings.Contains(res.stderr, "--kubeconfig is required") {
		t.Errorf("without --kubeconfig: exit %d stderr %q", res.code, res.stderr)
	}
}

// kubegate controllers runs on its own against kubegate apiserver, as
// kube-controller-manager runs against kube-apiserver: the node lifecycle
// controller lifts the not-ready taint admission gave a node that reports
// Ready, and the taint eviction controller deletes a pod bound to a node
// with a NoExecute taint it does not tolerate.
func TestControllersRunAgainstAPIServer(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	dir := pkiTree(t)
	p := startAPIServer(t, dir, t.TempDir(), 0)
	admin := func(stdin string, args ...string) result {
		t.Helper()
		var in []byte
		if stdin != "" {
			in = []byte(stdin)
		}
		return runCmd(t, in, "kubectl", append([]string{"--kubeconfig", filepath.Join(dir, "admin.conf"), "--server", p.url}, args...)...)
	}
	must(t, admin(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`, "create", "-f", "-"), "node/n1 created")
	must(t, admin(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"},"spec":{"taints":[{"key":"dedicated","value":"x","effect":"NoExecute"}]}}`,
		"create", "-f", "-"), "node/n2 created")
	now := time.Now().UTC().Format(time.RFC3339)
	ready := `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":"` + now +
		`","lastTransitionTime":"` + now + `"}]}}`
	for _, n := range []string{"n1", "n2"} {
		must(t, admin("", "patch", "node", n, "--subresource=status", "--type=merge", "-p", ready), "patched")
	}
	must(t, admin("", "get", "node", "n1", "-o", "jsonpath={.spec.taints[*].key}"), "node.kubernetes.io/not-ready")
	must(t, admin(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"n2","containers":[{"name":"c","image":"i"}]}}`,
		"create", "-f", "-"), "pod/p created")

	cmd := exec.Command(kubegateBin, "controllers", "--kubeconfig", filepath.Join(dir, "admin.conf"), "--master", p.url,
		"--controllers", "nodelifecycle,taint-eviction-controller")
	stderr := &testwait.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	cs := clientset(t, dir, p.url)
	ctx := context.Background()
	testwait.For(t, 30*time.Second, "n1 untainted", func() (bool, string) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(n.Spec.Taints) == 0, "taints still there; controllers stderr:\n" + stderr.String()
	})
	testwait.For(t, 30*time.Second, "pod p evicted", func() (bool, string) {
		pod, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return pod.DeletionTimestamp != nil, "not deleted; controllers stderr:\n" + stderr.String()
	})
	if !strings.Contains(stderr.String(), "nodelifecycle,taint-eviction-controller") {
		t.Errorf("the controllers did not say which ran:\n%s", stderr)
	}
}
