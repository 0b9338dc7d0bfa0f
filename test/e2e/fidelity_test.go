package e2e

import (
	"strings"
	"testing"
)

// kubectl users see kube-apiserver's answers from kubegate up: a pod that
// kube refuses is refused with kube's message, a kind kubegate does not
// serve gets kube's "could not find the requested resource", and logs,
// exec and drain work on simulated nodes (docs/kubernetes-behaviour.md
// D.5, D.9).
func TestUpAnswersKubectlLikeKubeAPIServer(t *testing.T) {
	requireTool(t, "kubectl")
	c := startUp(t, t.TempDir(), 0, "--nodes", "1")

	pod := `apiVersion: v1
kind: Pod
metadata:
  name: sometimes
spec:
  restartPolicy: Sometimes
  containers:
  - name: app
    image: registry.example/app:1
`
	res := c.kubectl(t, []byte(pod), "create", "-f", "-")
	want := `The Pod "sometimes" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`
	if res.code == 0 || !strings.Contains(res.stderr, want) {
		t.Errorf("kubectl create -f (restartPolicy Sometimes): exit %d, stderr %q; want an error with %q", res.code, res.stderr, want)
	}

	must(t, c.kubectl(t, nil, "create", "deployment", "x", "--image=y"), "deployment.apps/x created")
	// The budget selects no pod: one over x's single pod would hold the
	// drain below, as it would on kube.
	must(t, c.kubectl(t, nil, "create", "poddisruptionbudget", "x", "--selector=app=none", "--min-available=1"), "poddisruptionbudget.policy/x created")
	res = c.kubectl(t, nil, "create", "ingress", "x", "--rule=example.com/=x:80")
	must(t, res, "ingress.networking.k8s.io/x created")

	must(t, c.kubectl(t, nil, "run", "web", "--image=registry.example/web:1"), "pod/web created")
	must(t, c.kubectl(t, nil, "wait", "--for=condition=Ready", "pod/web", "--timeout=30s"), "condition met")
	must(t, c.kubectl(t, nil, "logs", "web"), `container "web" of pod default/web runs on the simulated node`)
	res = c.kubectl(t, nil, "exec", "web", "--", "ls")
	if res.code == 0 || !strings.Contains(res.stderr, "runs no containers: exec is not available") {
		t.Errorf("kubectl exec: exit %d, stderr %q; want the simulated node's refusal", res.code, res.stderr)
	}
	node := c.kubectl(t, nil, "get", "pod", "web", "-o", "jsonpath={.spec.nodeName}").stdout
	must(t, c.kubectl(t, nil, "drain", node, "--force", "--ignore-daemonsets", "--timeout=60s"), "pod/web evicted")
}
