package main

import (
	"bytes"
	"strings"
	"testing"
)

// Against a kubegate built from another commit, the ratios are printed
// without the goals, which are stated against kube-apiserver.
func TestSummaryAgainstAnotherBuildHasNoGoalVerdicts(t *testing.T) {
	t.Parallel()
	var rs []result
	for round := 1; round <= 2; round++ {
		rs = append(rs, fakeRun("kubegate-up", round, 2, 0), fakeRun("kubegate-up-base", round, 1, 0))
	}
	var b bytes.Buffer
	summary(&b, rs, "kubegate-up-base", 10)
	out := b.String()
	if !strings.Contains(out, "kubegate-up ÷ kubegate-up-base") {
		t.Fatalf("no ratios to kubegate-up-base in:\n%s", out)
	}
	if strings.Contains(out, "goal") {
		t.Errorf("goal verdicts against a kubegate build:\n%s", out)
	}
	b.Reset()
	summary(&b, append(rs, fakeRun("kube", 1, 1, 0)), "kube", 10)
	if !strings.Contains(b.String(), "goal ≥ 3") {
		t.Errorf("no goal verdicts against kube:\n%s", b.String())
	}
}
