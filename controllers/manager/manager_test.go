package manager

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/authz/bootstrap"
	"github.com/kubegate/kubegate/controllers"
)

func names(ds []controllers.Descriptor) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

// TestSelectFollowsKubeSyntax checks the --controllers list as
// kube-controller-manager reads it: * is every controller, -NAME leaves
// one out, NAME alone turns on only that one, an unknown name is refused.
func TestSelectFollowsKubeSyntax(t *testing.T) {
	all, err := Select(nil)
	if err != nil || !slices.Equal(names(all), Names()) {
		t.Fatalf("Select(nil) = %v, %v; want every controller", names(all), err)
	}
	one, err := Select([]string{"nodelifecycle"})
	if err != nil || !slices.Equal(names(one), []string{"nodelifecycle"}) {
		t.Errorf("Select(nodelifecycle) = %v, %v", names(one), err)
	}
	none, err := Select([]string{"*", "-nodelifecycle"})
	if err != nil || slices.Contains(names(none), "nodelifecycle") {
		t.Errorf("Select(*,-nodelifecycle) = %v, %v", names(none), err)
	}
	if _, err := Select([]string{"*", "nosuch"}); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("an unknown controller gave %v, want an error naming it", err)
	}
}

// With every controller left out, Run still runs until its context is
// done, so that kubegate up keeps serving.
func TestRunWithNoControllerWaitsForItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var none []string
	for _, name := range Names() {
		none = append(none, "-"+name)
	}
	go func() {
		done <- Run(ctx, Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Controllers: none})
	}()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before its context was done", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestEveryControllerHasItsServiceAccountRole checks that each controller
// names the service account kube runs it as, and that the default policy
// gives that account a role (docs/kubernetes-behaviour.md C.4, G.15).
func TestEveryControllerHasItsServiceAccountRole_G15(t *testing.T) {
	roles := map[string]bool{}
	for _, r := range bootstrap.ClusterRoles() {
		roles[r.Name] = true
	}
	for _, d := range All {
		if d.ServiceAccount == "" {
			t.Errorf("controller %s names no service account", d.Name)
		} else if !roles[bootstrap.ControllerRolePrefix+d.ServiceAccount] {
			t.Errorf("controller %s runs as %s, which has no %s role", d.Name, d.ServiceAccount, bootstrap.ControllerRolePrefix+d.ServiceAccount)
		}
	}
}
