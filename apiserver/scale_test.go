package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
)

const (
	rcsPath = "/api/v1/namespaces/default/replicationcontrollers"
	rssPath = "/apis/apps/v1/namespaces/default/replicasets"
	// appSelector selects the labels of workloadTemplate.
	appSelector = `"selector":{"matchLabels":{"app":"a"}},`
)

// workloadTemplate is a pod template labelled app=a with one container,
// and extra pod spec fields.
func workloadTemplate(extraSpec string) string {
	spec := `"containers":[{"name":"c","image":"i"}]`
	if extraSpec != "" {
		spec += "," + extraSpec
	}
	return `{"metadata":{"labels":{"app":"a"}},"spec":{` + spec + `}}`
}

// manifest is an object of kind (apps/v1 unless ReplicationController)
// whose spec has the given fields before the template.
func manifest(kind, name, spec, template string) string {
	apiVersion := "apps/v1"
	if kind == "ReplicationController" {
		apiVersion = "v1"
	}
	return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q},"spec":{%s"template":%s}}`, apiVersion, kind, name, spec, template)
}

// createJSON creates an object and returns its answer decoded as JSON.
func (ts *testServer) createJSON(t *testing.T, path, body string) map[string]any {
	t.Helper()
	code, b := ts.send(t, "POST", path, "", body)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at reads a value of a decoded JSON object by a dotted path; [n] indexes
// a list.
func at(t *testing.T, v any, path string) any {
	t.Helper()
	for _, p := range strings.Split(path, ".") {
		var idx int
		if n, _ := fmt.Sscanf(p, "[%d]", &idx); n == 1 {
			l, _ := v.([]any)
			if idx >= len(l) {
				return nil
			}
			v = l[idx]
			continue
		}
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// wantFields compares the values at paths (JSON-encoded; "" for absent).
func wantFields(t *testing.T, obj map[string]any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		got := ""
		if v := at(t, obj, path); v != nil {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != w {
			t.Errorf("%s = %s, want %s", path, got, w)
		}
	}
}

// The scale subresource shows and changes spec.replicas as an
// autoscaling/v1 Scale, bumps the generation as an update of the object
// does, and refuses negative replicas (G.2).
func TestScaleSubresource_G2(t *testing.T) {
	ts := newTestServer(t)
	rs := ts.createJSON(t, rssPath, manifest("ReplicaSet", "web", appSelector, workloadTemplate("")))
	rc := ts.createJSON(t, rcsPath, manifest("ReplicationController", "old", "", workloadTemplate("")))
	decode := func(b []byte) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return m
	}

	code, b := ts.send(t, "GET", rssPath+"/web/scale", "", "")
	if code != http.StatusOK {
		t.Fatalf("get scale: %d %s", code, b)
	}
	wantFields(t, decode(b), map[string]string{"apiVersion": `"autoscaling/v1"`, "kind": `"Scale"`, "spec.replicas": "1",
		"status.selector": `"app=a"`, "metadata.uid": string(mustJSON(at(t, rs, "metadata.uid")))})

	code, b = ts.send(t, "PATCH", rssPath+"/web/scale", "application/merge-patch+json", `{"spec":{"replicas":4}}`)
	if code != http.StatusOK {
		t.Fatalf("patch scale: %d %s", code, b)
	}
	wantFields(t, decode(b), map[string]string{"spec.replicas": "4"})
	_, b = ts.send(t, "GET", rssPath+"/web", "", "")
	got := decode(b)
	wantFields(t, got, map[string]string{"spec.replicas": "4", "metadata.generation": "2"})
	if mf, _ := json.Marshal(at(t, got, "metadata.managedFields")); !strings.Contains(string(mf), `"subresource":"scale"`) {
		t.Errorf("managedFields %s: no entry of the scale subresource", mf)
	}

	code, b = ts.send(t, "PUT", rssPath+"/web/scale", "", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":-1}}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `Scale.autoscaling \"web\" is invalid: spec.replicas`) {
		t.Errorf("negative replicas: %d %s, want 422 naming spec.replicas", code, b)
	}

	code, b = ts.send(t, "PUT", rcsPath+"/old/scale", "", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"old"},"spec":{"replicas":3}}`)
	if code != http.StatusOK {
		t.Fatalf("put rc scale: %d %s", code, b)
	}
	wantFields(t, decode(b), map[string]string{"spec.replicas": "3", "status.selector": `"app=a"`, "metadata.uid": string(mustJSON(at(t, rc, "metadata.uid")))})

	code, b = ts.send(t, "GET", "/apis/apps/v1", "", "")
	if code != http.StatusOK || !strings.Contains(string(b), `{"name":"replicasets/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]}`) {
		t.Errorf("discovery: %d %s: no replicasets/scale entry", code, b)
	}
}

// scaleAdmission records what admission is given for scale updates and
// doubles the replicas of the Scale it mutates.
type scaleAdmission struct{ seen []string }

func (s *scaleAdmission) Admit(_ context.Context, a *AdmissionAttributes) error {
	if a.Subresource != "scale" {
		return nil
	}
	sc, ok := a.Object.(*autoscalingv1.Scale)
	_, oldOK := a.OldObject.(*autoscalingv1.Scale)
	s.seen = append(s.seen, fmt.Sprintf("admit %s %s/%s %v %v", a.Kind, a.Resource.Resource, a.Subresource, ok, oldOK))
	if ok {
		sc.Spec.Replicas *= 2
	}
	return nil
}

func (s *scaleAdmission) Validate(_ context.Context, a *AdmissionAttributes) error {
	if a.Subresource != "scale" {
		return nil
	}
	sc, ok := a.Object.(*autoscalingv1.Scale)
	if !ok {
		return fmt.Errorf("validate: %T", a.Object)
	}
	s.seen = append(s.seen, fmt.Sprintf("validate %s %d", a.Kind, sc.Spec.Replicas))
	return nil
}

// An update of the scale subresource is admitted as kube-apiserver admits
// it: both phases are given autoscaling/v1 Scales, the stored object's
// and the new one, and the replicas mutating admission sets are the ones
// stored (D.13).
func TestScaleAdmittedAsScale_D13(t *testing.T) {
	adm := &scaleAdmission{}
	ts := newTestServer(t, func(c *Config) { c.Admission = []Admission{adm} })
	ts.createJSON(t, rssPath, manifest("ReplicaSet", "web", appSelector, workloadTemplate("")))
	code, b := ts.send(t, "PATCH", rssPath+"/web/scale", "application/merge-patch+json", `{"spec":{"replicas":3}}`)
	if code != http.StatusOK {
		t.Fatalf("patch scale: %d %s", code, b)
	}
	want := []string{"admit autoscaling/v1, Kind=Scale replicasets/scale true true", "validate autoscaling/v1, Kind=Scale 6"}
	if !slices.Equal(adm.seen, want) {
		t.Errorf("admission saw %q, want %q", adm.seen, want)
	}
	_, b = ts.send(t, "GET", rssPath+"/web", "", "")
	var rs map[string]any
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	wantFields(t, rs, map[string]string{"spec.replicas": "6"})
}
