package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI runs kubegate in-process and returns its exit code and outputs.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, errOut := runCLI(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "kubegate ") {
		t.Fatalf("version: code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestUnknownCommand(t *testing.T) {
	code, _, errOut := runCLI(t, "", "no-such-command")
	if code == 0 {
		t.Fatal("unknown command exited 0")
	}
	if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 || !strings.Contains(errOut, "no-such-command") {
		t.Errorf("stderr = %q, want one line naming the command", errOut)
	}
}

func TestCompletion(t *testing.T) {
	code, out, _ := runCLI(t, "", "completion", "bash")
	if code != 0 || !strings.Contains(out, "kubegate") {
		t.Fatalf("completion bash: code %d, %d bytes", code, len(out))
	}
}
