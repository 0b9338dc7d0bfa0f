package conformance

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRecordingNamesWhatTheServerGenerated(t *testing.T) {
	n := newNamer("ctl1-demo")
	rs := &unstructured.Unstructured{Object: map[string]any{}}
	rs.SetName("app-7d9c5b8f4d")
	rs.SetLabels(map[string]string{"pod-template-hash": "7d9c5b8f4d"})
	pod := &unstructured.Unstructured{Object: map[string]any{}}
	pod.SetGenerateName("app-7d9c5b8f4d-")
	pod.SetName("app-7d9c5b8f4d-x2k9q")
	ordinal := &unstructured.Unstructured{Object: map[string]any{}}
	ordinal.SetGenerateName("db-")
	ordinal.SetName("db-0")
	for _, u := range []*unstructured.Unstructured{rs, pod, ordinal} {
		n.learn(u)
	}
	got := n.text("ctl1-demo/app-7d9c5b8f4d-x2k9q of app-7d9c5b8f4d on node-2 at 10.244.1.7, db-0, " +
		"uid 6f1c2a3b-1d2e-4f5a-8b9c-0d1e2f3a4b5c, 2026-11-26T02:00:46Z")
	want := "<namespace>/app-<hash1>-<rand> of app-<hash1> on <node> at <ip>, db-0, uid <uid>, <time>"
	if got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

func TestRecordingSortsEndpointsByWhatItCompares(t *testing.T) {
	slice := func(first, second string) map[string]any {
		ep := func(ip, pod string) any {
			return map[string]any{"addresses": []any{ip}, "nodeName": "node-1", "targetRef": map[string]any{"name": pod}}
		}
		return map[string]any{"endpoints": []any{ep(first, "web-a"), ep(second, "web-b")}}
	}
	a, b := render(slice("10.244.0.9", "10.244.2.3")), render(slice("10.244.2.3", "10.244.0.9"))
	if a != b {
		t.Errorf("the same endpoints with other IPs render differently:\n%s\n%s", a, b)
	}
	if strings.Contains(a, "10.244") || !strings.Contains(a, `"nodeName":"<node>"`) {
		t.Errorf("IPs or node names left in %s", a)
	}
}

func TestRecordingCountsObjectsWithTheSameStory(t *testing.T) {
	got := countDuplicates([]string{"b", "a", "b"})
	if strings.Join(got, "|") != "a|b (×2)" {
		t.Errorf("countDuplicates = %q", got)
	}
	runs := collapseRuns([]string{"p", "p", "q", "p"})
	if strings.Join(runs, "|") != "p ×2|q|p" {
		t.Errorf("collapseRuns = %q", runs)
	}
}
