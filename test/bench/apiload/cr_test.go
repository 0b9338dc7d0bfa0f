package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/internal/testgolden"
)

// fakeCRRuns are two rounds of kube and kubegate-up on custom resources:
// JSON LISTs only, one timed create phase, no watch phase.
func fakeCRRuns() []result {
	var rs []result
	for round := 1; round <= 2; round++ {
		for _, sys := range []struct {
			name string
			f    float64
		}{{"kube", 1}, {"kubegate-up", 3.5}} {
			r := fakeRun(sys.name, round, sys.f, 0)
			r.Kind = kindCR
			r.Creates = r.Creates[:1]
			r.ListProtoMedian, r.ListProtoFirst, r.ListProtoCPUms, r.ListProtoBytes = 0, 0, 0, 0
			r.Watch = watchPhase{}
			rs = append(rs, r)
		}
	}
	return rs
}

// The report of custom-resource runs names custom resources, has no
// protobuf rows and states the goals of creates and memory alone.
func TestSummaryOfCustomResourcesGolden(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	summary(&b, fakeCRRuns(), "kube", 10)
	out := b.String()
	testgolden.Check(t, filepath.Join("testdata", "report_cr.golden"), b.Bytes())
	for _, want := range []string{"custom-resource creates/s, 16 clients", "LIST 10000 custom resources, JSON (ms)", "custom-resource creates/s at 16 clients  3.50  by round 3.50  goal ≥ 3: met"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "protobuf") || strings.Contains(out, "pods") {
		t.Errorf("protobuf or pod rows in a custom-resource report:\n%s", out)
	}
	if strings.Contains(out, "goal ≤ 0.7") {
		t.Errorf("a LIST goal for custom resources:\n%s", out)
	}
}

func TestBenchCRDAndWidget(t *testing.T) {
	t.Parallel()
	crd, err := benchCRD()
	if err != nil {
		t.Fatal(err)
	}
	v := crd.Spec.Versions[0]
	if crd.Name != widgets.Resource+"."+widgets.Group || crd.Spec.Names.Plural != widgets.Resource || v.Name != widgets.Version || !v.Served || !v.Storage {
		t.Fatalf("crd.yaml defines %s (%s %s), not the widgets apiload creates", crd.Name, crd.Spec.Names.Plural, v.Name)
	}
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if len(spec.XValidations) != 2 || spec.Properties["replicas"].Default == nil || len(spec.Properties["size"].Enum) == 0 || spec.Properties["image"].Pattern == "" {
		t.Errorf("crd.yaml's spec lacks the two CEL rules, the default, the enum or the pattern: %+v", spec)
	}
	w := widget("w-1", map[string]string{"app": "bench"})
	if w.GetKind() != crd.Spec.Names.Kind || w.GetAPIVersion() != widgets.GroupVersion().String() || w.GetName() != "w-1" || w.GetLabels()["app"] != "bench" {
		t.Errorf("widget = %v", w.Object)
	}
	for _, f := range spec.Required {
		if _, ok := w.Object["spec"].(map[string]any)[f]; !ok {
			t.Errorf("widget has no spec.%s, which crd.yaml requires", f)
		}
	}
}

func TestCheckList(t *testing.T) {
	t.Parallel()
	body := []byte(`{"kind":"WidgetList","apiVersion":"bench.kubegate.io/v1","items":[{},{}]}`)
	if err := checkList(kindCR, jsonType, body, 2); err != nil {
		t.Errorf("checkList of 2 widgets: %v", err)
	}
	for _, tc := range []struct {
		body string
		want int
	}{{string(body), 3}, {`{"kind":"PodList","items":[{},{}]}`, 2}, {`not json`, 0}} {
		if err := checkList(kindCR, jsonType, []byte(tc.body), tc.want); err == nil {
			t.Errorf("checkList(%s, %d): no error", tc.body, tc.want)
		}
	}
}

func TestRealMainKindFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-kubeconfig", "x", "-pids", "1", "-kind", "secrets"},
		{"-kubeconfig", "x", "-pids", "1", "-kind", "cr"}, // the watch phase is for pods
	} {
		var out, errb bytes.Buffer
		if code := realMain(args, &out, &errb); code != 2 {
			t.Errorf("realMain(%q) = %d, want 2; stderr %s", args, code, errb.String())
		}
	}
}
