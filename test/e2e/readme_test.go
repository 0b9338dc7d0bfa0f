package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// transcriptStep is one command of the README's transcript and the output
// printed under it.
type transcriptStep struct {
	command string
	output  string
}

// readTranscript returns the steps of the console block that follows the
// <!-- transcript --> marker in README.md.
func readTranscript(t *testing.T) []transcriptStep {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "<!-- transcript -->\n```console\n")
	if !ok {
		t.Fatal("README.md has no <!-- transcript --> marker followed by a ```console block")
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		t.Fatal("README.md: the transcript block is not closed")
	}
	var steps []transcriptStep
	for _, line := range strings.Split(block, "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			steps = append(steps, transcriptStep{command: cmd})
			continue
		}
		if len(steps) == 0 {
			t.Fatalf("README.md: transcript output %q comes before any command", line)
		}
		steps[len(steps)-1].output += line + "\n"
	}
	return steps
}

// What changes from run to run: times, ages, serials, fingerprints,
// addresses and ports, and which of several equal nodes the scheduler picks.
var transcriptNoise = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?(Z| UTC)?`), "TIME"},
	{regexp.MustCompile(`\b([0-9A-Fa-f]{2}:){7,}[0-9A-Fa-f]{2}\b`), "FINGERPRINT"},
	{regexp.MustCompile(`\b[0-9A-F]{16,}\b( \(\d+\))?`), "SERIAL"},
	{regexp.MustCompile(`\b\d+\.\d+\.\d+\.\d+(:\d+)?\b`), "ADDR"},
	{regexp.MustCompile(`\b\d+[smhd](\d+[smh])?\b`), "AGE"},
	{regexp.MustCompile(`\bnode-\d+\b`), "node-N"},
	{regexp.MustCompile(`[ \t]+`), " "},
	{regexp.MustCompile(`(?m) +$`), ""},
}

func normalizeTranscript(s string) string {
	for _, n := range transcriptNoise {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return strings.TrimRight(s, "\n")
}

// TestREADMETranscript runs the commands of the README's transcript, in a
// new directory with kubegate on the PATH, and compares what each prints
// with the README, ignoring what changes between runs. A backgrounded
// "kubegate up" gets a free port and is compared up to its "Ctrl-C" line;
// "export" sets the variable for the commands after it; a kubectl get or
// scheduler explain whose output does not match yet is retried for a few
// seconds, since the nodes and the pod settle asynchronously; after
// "kubectl get nodes" it also waits for the nodes' taints to be lifted.
func TestREADMETranscript(t *testing.T) {
	requireTool(t, "bash")
	requireTool(t, "kubectl")
	steps := readTranscript(t)
	if len(steps) < 5 {
		t.Fatalf("README.md transcript has %d commands, want the whole walk from kubegate up to scheduler explain", len(steps))
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kubegateBin, filepath.Join(bin, "kubegate")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repoRoot(t), "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	env := append(kubectlEnv(t), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PWD="+dir, "KUBECACHEDIR="+filepath.Join(dir, ".kube-cache"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for _, st := range steps {
		want := normalizeTranscript(st.output)
		switch {
		case strings.HasSuffix(st.command, " &"):
			args := strings.Fields(strings.TrimSuffix(st.command, " &"))
			if len(args) < 2 || args[0] != "kubegate" || args[1] != "up" {
				t.Fatalf("README.md transcript backgrounds %q; only kubegate up is supported", st.command)
			}
			args = append(args[1:], "--secure-port", fmt.Sprint(freePort(t)))
			cmd := exec.CommandContext(ctx, kubegateBin, args...)
			cmd.Dir, cmd.Env = dir, env
			var out testwait.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
			cmd.WaitDelay = 10 * time.Second
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cmd.Process.Signal(syscall.SIGTERM)
				cmd.Wait()
			})
			testwait.For(t, 30*time.Second, "$ "+st.command+": up", func() (bool, string) {
				return strings.Contains(out.String(), "Ctrl-C stops everything"), "not; output:\n" + out.String()
			})
			if got := normalizeTranscript(out.String()); got != want {
				t.Errorf("$ %s\ngot (normalized):\n%s\nwant (normalized README):\n%s", st.command, got, want)
			}
		case strings.HasPrefix(st.command, "export "):
			kv := strings.TrimPrefix(st.command, "export ")
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("README.md transcript: %q is not export NAME=VALUE", st.command)
			}
			env = append(env, k+"="+strings.ReplaceAll(v, "$PWD", dir))
			if want != "" {
				t.Errorf("$ %s prints nothing, but the README shows:\n%s", st.command, st.output)
			}
		default:
			retry := strings.HasPrefix(st.command, "kubectl get ") || strings.HasPrefix(st.command, "kubegate scheduler explain ")
			deadline := time.Now().Add(15 * time.Second)
			for {
				cmd := exec.CommandContext(ctx, "bash", "-c", st.command)
				cmd.Dir, cmd.Env = dir, env
				out, err := cmd.CombinedOutput()
				got := normalizeTranscript(string(out))
				if err == nil && got == want {
					break
				}
				if !retry || time.Now().After(deadline) {
					t.Fatalf("$ %s (err %v)\ngot (normalized):\n%s\nwant (normalized README):\n%s", st.command, err, got, want)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if strings.HasPrefix(st.command, "kubectl get nodes") {
				waitNodesUntainted(ctx, t, dir, env)
			}
		}
	}
}

// waitNodesUntainted waits until no node carries a taint. A node shows
// Ready as soon as it reports so, but the node lifecycle controller lifts
// the not-ready taint the API server gave it at registration a moment
// later, and a pod created in between is kept off it: the README's reader
// types the next command long after that moment, a test may not.
func waitNodesUntainted(ctx context.Context, t *testing.T, dir string, env []string) {
	t.Helper()
	testwait.For(t, 30*time.Second, "the nodes' not-ready taints lifted", func() (bool, string) {
		cmd := exec.CommandContext(ctx, "kubectl", "get", "nodes", "-o", "jsonpath={.items[*].spec.taints}")
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return err == nil && strings.TrimSpace(string(out)) == "", fmt.Sprintf("err %v, taints %s", err, out)
	})
}
