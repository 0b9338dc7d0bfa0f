package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

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
