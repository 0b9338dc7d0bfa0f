package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNewRefusesResourcesTwice: a resource of Config.Resources that is
// already served, or that names no resource or kind, is a wiring mistake
// New reports. The test servers' resources (apiserver/registry's, with
// the core group's namespaces) come first.
func TestNewRefusesResourcesTwice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		res  []*Resource
		want string
	}{
		{"a served resource again", []*Resource{{GVR: coreGV.WithResource("namespaces"), Kind: "Namespace"}}, "resource /v1, Resource=namespaces given twice"},
		{"the same resource twice", []*Resource{
			{GVR: corev1.SchemeGroupVersion.WithResource("widgets"), Kind: "Widget"},
			{GVR: corev1.SchemeGroupVersion.WithResource("widgets"), Kind: "Widget"}}, "resource /v1, Resource=widgets given twice"},
		{"no kind", []*Resource{{GVR: corev1.SchemeGroupVersion.WithResource("widgets")}}, "a resource without a name or a kind"},
		{"nil", []*Resource{nil}, "a resource without a name or a kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := newTestServer(t).cfg
			cfg.Resources = append(servedResources(), tc.res...)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestNewRefusesAConfigWithoutNamespaces_G9: the namespace lifecycle is
// the server's, the namespaces apiserver/registry/core's; a Config that
// does not serve them is refused with an error naming the package.
func TestNewRefusesAConfigWithoutNamespaces_G9(t *testing.T) {
	t.Parallel()
	cfg := newTestServer(t).cfg
	cfg.Resources = nil
	want := "no namespaces resource; give the core group's, apiserver/registry/core, in Resources"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New = %v, want an error containing %q", err, want)
	}
}
