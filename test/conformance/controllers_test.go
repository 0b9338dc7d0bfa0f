package conformance

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testtool"
)

// TestControllersBehaveLikeKubeControllerManager runs each scenario of
// controllerScenarios twice, with kubegate's scheduler and simulated nodes
// both times: on kube-apiserver and etcd with kube-controller-manager, and
// on `kubegate up` with kubegate's controllers. It compares what the two
// recordings show (controllers_record_test.go) and fails on a difference
// that controllers_allowlist_test.go does not give a reason for, and on a
// listed difference that has gone. Both clusters start once; every
// scenario has a namespace of its own, and all of them run at once.
// docs/architecture.md ("The conformance test") and
// docs/kubernetes-behaviour.md G.14 explain the comparison.
func TestControllersBehaveLikeKubeControllerManager(t *testing.T) {
	testtool.Require(t, "kubectl")
	bin := requireOracle(t)

	// The clusters start one after the other: t.Fatal must stay on the
	// test's goroutine. KUBEGATE_CONTROLLERS_SELF_CHECK=1 compares
	// kube-controller-manager with itself instead, each scenario run
	// twice at once on the same cluster, which shows whether the
	// recordings depend on timing.
	selfCheck := os.Getenv("KUBEGATE_CONTROLLERS_SELF_CHECK") == "1"
	kube := startKubeCluster(t, bin)
	kg := kube
	if !selfCheck {
		kg = startKubegateCluster(t)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	scenarios := controllerScenarios()
	// KUBEGATE_CONTROLLERS_SCENARIOS=REGEXP runs only the scenarios whose
	// names match, for work on one of them; the listed differences of
	// the others are then not checked.
	only := os.Getenv("KUBEGATE_CONTROLLERS_SCENARIOS")
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			t.Fatalf("KUBEGATE_CONTROLLERS_SCENARIOS: %v", err)
		}
		scenarios = slices.DeleteFunc(scenarios, func(sc controllerScenario) bool { return !re.MatchString(sc.name) })
	}
	recordings := make([][2][]string, len(scenarios))
	var wg sync.WaitGroup
	for i, sc := range scenarios {
		for j, c := range []*cluster{kube, kg} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				recordings[i][j] = runScenario(ctx, c, sc, fmt.Sprintf("ctl%d-%s", j+1, sc.name))
			}()
		}
	}
	wg.Wait()

	var unexpected, fixed []string
	for i, sc := range scenarios {
		kubeRec, kgRec := recordings[i][0], recordings[i][1]
		t.Logf("scenario %s on kube-apiserver with kube-controller-manager:\n%s", sc.name, strings.Join(kubeRec, "\n"))
		diff := lineDiff(kubeRec, kgRec)
		listed, isListed := controllerDifferences[sc.name]
		if selfCheck {
			listed, isListed = "", false
		}
		switch {
		case diff == "" && isListed:
			fixed = append(fixed, sc.name)
			t.Logf("same     %s (listed as a difference: %s)", sc.name, listed)
		case diff == "":
			t.Logf("same     %s", sc.name)
		case isListed:
			t.Logf("differs  %s [listed: %s]; - kube-controller-manager, + kubegate:\n%s", sc.name, listed, diff)
		default:
			unexpected = append(unexpected, sc.name)
			t.Logf("differs  %s; - kube-controller-manager, + kubegate:\n%s", sc.name, diff)
		}
	}
	for name := range controllerDifferences {
		if only == "" && !hasScenario(scenarios, name) {
			t.Errorf("controllers_allowlist_test.go lists %q, which is no scenario", name)
		}
	}
	sort.Strings(unexpected)
	if len(unexpected) > 0 {
		t.Errorf("%d scenarios differ from kube-controller-manager: %s", len(unexpected), strings.Join(unexpected, ", "))
	}
	if len(fixed) > 0 && !selfCheck {
		t.Errorf("these scenarios now behave like kube-controller-manager; take them out of controllers_allowlist_test.go: %s", strings.Join(fixed, ", "))
	}
	if t.Failed() {
		t.Logf("the end of the clusters' logs:%s%s", kube.tailLogs(), kg.tailLogs())
	}
}

func hasScenario(scenarios []controllerScenario, name string) bool {
	for _, sc := range scenarios {
		if sc.name == name {
			return true
		}
	}
	return false
}

// lineDiff returns the lines only a has ("- ") and only b has ("+ "), in
// the order of a longest common subsequence, with the step each is in;
// "" when a and b are the same.
func lineDiff(a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	step, shown := "", ""
	mark := func() {
		if step != shown {
			fmt.Fprintf(&out, "  in %s\n", step)
			shown = step
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			if strings.HasPrefix(a[i], "step: ") {
				step = a[i]
			}
			i++
			j++
		case j >= m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			mark()
			fmt.Fprintf(&out, "  - %s\n", a[i])
			i++
		default:
			mark()
			fmt.Fprintf(&out, "  + %s\n", b[j])
			j++
		}
	}
	return out.String()
}

func TestLineDiffShowsOnlyTheDifferingLines(t *testing.T) {
	a := []string{"step: one", "x", "y", "step: two", "z"}
	b := []string{"step: one", "x", "step: two", "z", "w"}
	want := "  in step: one\n  - y\n  in step: two\n  + w\n"
	if got := lineDiff(a, b); got != want {
		t.Errorf("lineDiff = %q, want %q", got, want)
	}
	if got := lineDiff(a, a); got != "" {
		t.Errorf("lineDiff of equal recordings = %q", got)
	}
}
