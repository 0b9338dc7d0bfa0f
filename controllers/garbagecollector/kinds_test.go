package garbagecollector

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// The kind map follows discovery: a full answer replaces it, an answer
// missing some groups keeps what was known of those groups only, and a
// failed discovery forgets nothing (G.8).
func TestKindMapFollowsDiscovery_G8(t *testing.T) {
	info := func(group, version, resource string) resourceInfo {
		return resourceInfo{gvr: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, namespaced: true}
	}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gadget := schema.GroupVersionKind{Group: "gadgets.example.com", Version: "v1", Kind: "Gadget"}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	old := map[schema.GroupVersionKind]resourceInfo{
		widget: info("example.com", "v1", "widgets"),
		gadget: info("gadgets.example.com", "v1", "gadgets"),
		pod:    info("", "v1", "pods"),
	}
	found := map[schema.GroupVersionKind]resourceInfo{pod: info("", "v1", "pods")}
	gadgetsFailed := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		gadget.GroupVersion(): errors.New("503")}}
	for _, tc := range []struct {
		name string
		err  error
		want []schema.GroupVersionKind
	}{
		{"full answer", nil, []schema.GroupVersionKind{pod}},
		{"one group failed", gadgetsFailed, []schema.GroupVersionKind{gadget, pod}},
		{"discovery failed", errors.New("connection refused"), []schema.GroupVersionKind{gadget, pod, widget}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeKinds(old, found, tc.err)
			keys := slices.SortedFunc(maps.Keys(got), func(a, b schema.GroupVersionKind) int {
				return strings.Compare(a.String(), b.String())
			})
			want := slices.SortedFunc(slices.Values(tc.want), func(a, b schema.GroupVersionKind) int {
				return strings.Compare(a.String(), b.String())
			})
			if !slices.Equal(keys, want) {
				t.Errorf("kinds: got %v, want %v", keys, want)
			}
			for k, v := range got {
				if v != old[k] {
					t.Errorf("%v: got %v, want %v", k, v, old[k])
				}
			}
		})
	}
}
