package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

var (
	operatorOnce sync.Once
	operatorBin  string
	operatorErr  error
)

// requireOperator returns the controller-runtime operator of
// test/e2e/operator, built by its build.sh once per process (and once per
// machine: the script keeps it in the Go build cache). When it cannot be
// built, from the module proxy, the test is skipped, or fails when
// CI=true, as for any tool a test needs.
func requireOperator(t *testing.T) string {
	t.Helper()
	requireTool(t, "go")
	operatorOnce.Do(func() {
		var out, errb bytes.Buffer
		cmd := exec.Command(filepath.Join("operator", "build.sh"))
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			operatorErr = fmt.Errorf("test/e2e/operator/build.sh: %v\n%s", err, errb.String())
			return
		}
		operatorBin = strings.TrimSpace(out.String())
	})
	if operatorErr != nil && os.Getenv("CI") == "true" {
		t.Fatalf("the operator is required in CI: %v", operatorErr)
	}
	if operatorErr != nil {
		t.Skipf("no operator: %v", operatorErr)
	}
	return operatorBin
}

// startOperator runs the operator with kubeconfig until the test ends; its
// log is the returned buffer.
func startOperator(t *testing.T, kubeconfig string) *testwait.Buffer {
	t.Helper()
	log := &testwait.Buffer{}
	cmd := exec.Command(requireOperator(t))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("operator log:\n%s", log)
		}
	})
	return log
}

// greetingYAML is a Greeting in namespace ns.
func greetingYAML(ns, name, message string, replicas int) []byte {
	return fmt.Appendf(nil, "apiVersion: hello.example.com/v1\nkind: Greeting\nmetadata:\n  name: %q\n  namespace: %q\nspec:\n  message: %q\n  replicas: %d\n",
		name, ns, message, replicas)
}

// greetingState is observedGeneration/Ready/status.replicas of a Greeting.
const greetingState = `jsonpath={.status.observedGeneration}/{.status.conditions[?(@.type=="Ready")].status}/{.status.replicas}`

// waitFinalized waits until the operator's log says it finalized the
// Greeting whose UID is uid.
func waitFinalized(t *testing.T, log *testwait.Buffer, uid string) {
	t.Helper()
	want := `"uid":"` + uid + `"`
	testwait.For(t, 10*time.Second, "the operator finalizing "+uid, func() (bool, string) {
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, `"msg":"finalized greeting"`) && strings.Contains(line, want) {
				return true, ""
			}
		}
		return false, "not in its log"
	})
}

// An operator written with controller-runtime, on the manager's cache,
// reconciles its custom resource against `kubegate up`: it puts its
// finalizer on a Greeting, creates the ConfigMap the Greeting controls
// and writes the status through the status subresource; the ConfigMap
// follows the spec, `kubectl scale` goes through the scale subresource,
// `kubectl get` prints the printer columns, the CEL rule refuses a
// Greeting with kube's 422; a deleted Greeting goes once the operator's
// finalizer has run, and the garbage collector deletes its ConfigMap; a
// deleted namespace's Greeting is deleted by the namespace controller and
// finalized by the operator (I.1, G.8, G.9).
func TestControllerRuntimeOperatorReconcilesGreetings_I1(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	requireOperator(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0)
	admin := filepath.Join(dir, "admin.conf")

	must(t, c.kubectl(t, nil, "apply", "-f", filepath.Join("testdata", "greetings-crd.yaml")),
		"customresourcedefinition.apiextensions.k8s.io/greetings.hello.example.com created")
	must(t, c.kubectl(t, nil, "wait", "--for=condition=Established", "--timeout=30s", "crd/greetings.hello.example.com"),
		"condition met")
	log := startOperator(t, admin)

	must(t, c.kubectl(t, nil, "create", "namespace", "hello"), "namespace/hello created")
	must(t, c.kubectl(t, greetingYAML("hello", "x", "hello", 2), "apply", "-f", "-"), "greeting.hello.example.com/x created")
	uid := strings.TrimSpace(c.kubectl(t, nil, "-n", "hello", "get", "greeting", "x", "-o", "jsonpath={.metadata.uid}").stdout)

	t.Run("finalizer, owned config map and status", func(t *testing.T) {
		c.waitKubectl(t, "x reconciled", "1/True/2", "-n", "hello", "get", "greeting", "x", "-o", greetingState)
		must(t, c.kubectl(t, nil, "-n", "hello", "get", "greeting", "x", "-o", "jsonpath={.metadata.finalizers}"),
			`["hello.example.com/farewell"]`)
		must(t, c.kubectl(t, nil, "-n", "hello", "wait", "--for=condition=Ready", "--timeout=30s", "greeting/x"), "condition met")
		c.waitKubectl(t, "x's config map", "hello/2", "-n", "hello", "get", "configmap", "greeting-x", "-o", "jsonpath={.data.message}/{.data.replicas}")
		want := fmt.Sprintf("hello.example.com/v1/Greeting/x/%s/true/true", uid)
		must(t, c.kubectl(t, nil, "-n", "hello", "get", "configmap", "greeting-x", "-o",
			`jsonpath={range .metadata.ownerReferences[*]}{.apiVersion}/{.kind}/{.name}/{.uid}/{.controller}/{.blockOwnerDeletion}{end}`), want)
	})

	t.Run("the config map follows the spec", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "-n", "hello", "patch", "greeting", "x", "--type=merge", "-p", `{"spec":{"message":"bonjour"}}`),
			"greeting.hello.example.com/x patched")
		c.waitKubectl(t, "x's config map updated", "bonjour/2", "-n", "hello", "get", "configmap", "greeting-x", "-o", "jsonpath={.data.message}/{.data.replicas}")
		c.waitKubectl(t, "x reconciled again", "2/True/2", "-n", "hello", "get", "greeting", "x", "-o", greetingState)
	})

	t.Run("a deleted config map is made again", func(t *testing.T) {
		old := strings.TrimSpace(c.kubectl(t, nil, "-n", "hello", "get", "configmap", "greeting-x", "-o", "jsonpath={.metadata.uid}").stdout)
		must(t, c.kubectl(t, nil, "-n", "hello", "delete", "configmap", "greeting-x"), `configmap "greeting-x" deleted`)
		testwait.For(t, 30*time.Second, "greeting-x made again", func() (bool, string) {
			res := c.kubectl(t, nil, "-n", "hello", "get", "configmap", "greeting-x", "--ignore-not-found", "-o", "jsonpath={.metadata.uid} {.data.message}")
			got := strings.Fields(res.stdout)
			return len(got) == 2 && got[0] != old && got[1] == "bonjour", fmt.Sprintf("%q (stderr %q)", res.stdout, res.stderr)
		})
	})

	t.Run("kubectl scale", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "-n", "hello", "scale", "greeting/x", "--replicas=3"), "greeting.hello.example.com/x scaled")
		must(t, c.kubectl(t, nil, "-n", "hello", "get", "greeting", "x", "-o", "jsonpath={.spec.replicas}"), "3")
		c.waitKubectl(t, "x scaled", "3/True/3", "-n", "hello", "get", "greeting", "x", "-o", greetingState)
		c.waitKubectl(t, "x's config map scaled", "bonjour/3", "-n", "hello", "get", "configmap", "greeting-x", "-o", "jsonpath={.data.message}/{.data.replicas}")
		must(t, c.kubectl(t, nil, "-n", "hello", "get", "greeting", "x", "--subresource=scale", "-o", "jsonpath={.kind} {.spec.replicas} {.status.replicas}"),
			"Scale 3 3")
		// The CEL rule holds for a scale as for any update.
		res := c.kubectl(t, nil, "-n", "hello", "scale", "greeting/x", "--replicas=9")
		if res.code == 0 || !strings.Contains(res.stderr, "a greeting is said at most 5 times") {
			t.Errorf("scale to 9: exit %d, stdout %q, stderr %q; want the CEL rule's message", res.code, res.stdout, res.stderr)
		}
	})

	t.Run("printer columns", func(t *testing.T) {
		res := c.kubectl(t, nil, "-n", "hello", "get", "greetings")
		must(t, res, "NAME")
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME MESSAGE REPLICAS READY AGE" ||
			!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "x bonjour 3 True ") {
			t.Errorf("kubectl get greetings:\n%s", res.stdout)
		}
	})

	t.Run("the CEL rule refuses a greeting with kube's 422", func(t *testing.T) {
		res := c.kubectl(t, greetingYAML("hello", "loud", "HELLO", 7), "apply", "-f", "-")
		// kube-apiserver leaves out the value of an object a rule refuses.
		want := `The Greeting "loud" is invalid: spec: Invalid value: a greeting is said at most 5 times`
		if res.code == 0 || !strings.Contains(res.stderr, want) {
			t.Errorf("apply loud: exit %d, stdout %q, stderr %q; want %q", res.code, res.stdout, res.stderr, want)
		}
	})

	t.Run("delete runs the finalizer and the collector takes the config map", func(t *testing.T) {
		// kubectl waits until the Greeting is gone, which the finalizer holds up.
		must(t, c.kubectl(t, nil, "-n", "hello", "delete", "greeting", "x", "--timeout=60s"), `greeting.hello.example.com "x" deleted`)
		waitFinalized(t, log, uid)
		c.waitKubectl(t, "x's farewell event", "Farewell greeting-operator", "-n", "hello", "get", "events.events.k8s.io",
			"-o", `jsonpath={range .items[?(@.regarding.name=="x")]}{.reason} {.reportingController}{end}`)
		// The collector watches greetings once it reads discovery again,
		// every 30 s as kube-controller-manager's does, so it may learn
		// of x's deletion only then.
		c.waitCollected(t, admin, "hello", "configmap", "greeting-x")
	})

	// Every request the operator made so far was answered as it expected.
	// (Once a namespace is terminating, its writes there are refused.)
	for line := range strings.Lines(log.String()) {
		if strings.Contains(line, `"level":"error"`) || klogError.MatchString(line) {
			t.Errorf("the operator logged an error: %s", line)
		}
	}

	t.Run("a deleted namespace's greeting is deleted and finalized", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "create", "namespace", "doomed"), "namespace/doomed created")
		must(t, c.kubectl(t, greetingYAML("doomed", "y", "adieu", 1), "apply", "-f", "-"), "greeting.hello.example.com/y created")
		c.waitKubectl(t, "y reconciled", "1/True/1", "-n", "doomed", "get", "greeting", "y", "-o", greetingState)
		yUID := strings.TrimSpace(c.kubectl(t, nil, "-n", "doomed", "get", "greeting", "y", "-o", "jsonpath={.metadata.uid}").stdout)
		must(t, c.kubectl(t, nil, "delete", "namespace", "doomed", "--timeout=90s"), `namespace "doomed" deleted`)
		c.waitKubectl(t, "doomed gone", "", "get", "namespaces", "--field-selector=metadata.name=doomed", "-o", "name")
		waitFinalized(t, log, yUID)
	})
}

// klogError is the start of an error line of klog, which client-go logs with.
var klogError = regexp.MustCompile(`^E\d{4} `)
