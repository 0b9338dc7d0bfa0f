package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNewRefusesResourcesTwice: a resource of Config.Resources that is
// already served, or that names no resource or kind, is a wiring mistake
// New reports.
func TestNewRefusesResourcesTwice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		res  []*Resource
		want string
	}{
		{"a built-in resource again", []*Resource{{GVR: coreGV.WithResource("namespaces"), Kind: "Namespace"}}, "resource /v1, Resource=namespaces given twice"},
		{"the same resource twice", []*Resource{
			{GVR: corev1.SchemeGroupVersion.WithResource("widgets"), Kind: "Widget"},
			{GVR: corev1.SchemeGroupVersion.WithResource("widgets"), Kind: "Widget"}}, "resource /v1, Resource=widgets given twice"},
		{"no kind", []*Resource{{GVR: corev1.SchemeGroupVersion.WithResource("widgets")}}, "a resource without a name or a kind"},
		{"nil", []*Resource{nil}, "a resource without a name or a kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := newTestServer(t).cfg
			cfg.Resources = tc.res
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
