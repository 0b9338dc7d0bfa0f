package apiextensions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
	"github.com/kubegate/kubegate/apiserver/server"
	"github.com/kubegate/kubegate/internal/testwait"
)

const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

// schema is a structural schema that keeps any spec.
const schema = `{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}`

// version is one entry of spec.versions, served, with schema.
func version(name string, storage bool) string {
	return fmt.Sprintf(`{"name":%q,"served":true,"storage":%t,"schema":%s}`, name, storage, schema)
}

// crd is a CRD manifest of names in group with versions.
func crd(name, group, names, scope string, versions ...string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name +
		`"},"spec":{"group":"` + group + `","names":{` + names + `},"scope":"` + scope + `","versions":[` + strings.Join(versions, ",") + `]}}`
}

// request sends body to path and returns the status and the decoded
// answer.
func request(t *testing.T, srv *apiservertest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, data := rt.Do(t, srv, method, path, body, nil)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, code, data)
	}
	return code, m
}

// at returns the value at the path of keys in a decoded object.
func at(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// A created CRD reads back with kube's defaults (the singular name and
// list kind from the kind, the None conversion), the storage version in
// status.storedVersions, no conditions yet and generation 1 (I.1).
func TestCreateDefaults_I1(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	code, got := request(t, ts, "POST", crds, crd("widgets.example.com", "example.com", `"plural":"widgets","kind":"Widget"`, "Namespaced", version("v1", true)))
	if code != 201 {
		t.Fatalf("create: %d %v", code, got)
	}
	_, got = request(t, ts, "GET", crds+"/widgets.example.com", "")
	for _, c := range []struct {
		keys []string
		want any
	}{
		{[]string{"spec", "names", "singular"}, "widget"},
		{[]string{"spec", "names", "listKind"}, "WidgetList"},
		{[]string{"spec", "conversion", "strategy"}, "None"},
		{[]string{"status", "storedVersions"}, []any{"v1"}},
		{[]string{"status", "conditions"}, nil},
		{[]string{"metadata", "generation"}, float64(1)},
	} {
		if v := at(got, c.keys...); !reflect.DeepEqual(v, c.want) {
			t.Errorf("%s: got %v, want %v", strings.Join(c.keys, "."), v, c.want)
		}
	}
}

// The mistakes kube's validation refuses are 422s with its texts (I.1).
func TestValidation_I1(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	gadget := `"plural":"gadgets","kind":"Gadget"`
	for _, tt := range []struct {
		name, body string
		want       []string
	}{
		{"a bad group", crd("widgets.Example_Com", "Example_Com", `"plural":"widgets","kind":"Widget"`, "Namespaced", version("v1", true)),
			[]string{`metadata.name: Invalid value: "widgets.Example_Com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters`,
				`spec.group: Invalid value: "Example_Com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters`}},
		{"a group of one label", crd("widgets.example", "example", `"plural":"widgets","kind":"Widget"`, "Namespaced", version("v1", true)),
			[]string{`spec.group: Invalid value: "example": should be a domain with at least one dot`}},
		{"a bad plural", crd("Widgets.example.com", "example.com", `"plural":"Widgets","kind":"Widget"`, "Namespaced", version("v1", true)),
			[]string{`spec.names.plural: Invalid value: "Widgets": a DNS-1035 label must consist of lower case alphanumeric characters`}},
		{"a name that is not plural.group", crd("gadgets.example.com", "example.com", `"plural":"widgets","kind":"Widget"`, "Namespaced", version("v1", true)),
			[]string{`metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`}},
		{"no storage version", crd("gadgets.example.com", "example.com", gadget, "Namespaced", version("v1", false)),
			[]string{`spec.versions: Invalid value: `, `must have exactly one version marked as storage version`,
				`status.storedVersions: Invalid value: null: must have at least one stored version`}},
		{"two storage versions", crd("gadgets.example.com", "example.com", gadget, "Namespaced", version("v1", true), version("v2", true)),
			[]string{`must have exactly one version marked as storage version`}},
		{"a non-structural schema", crd("gadgets.example.com", "example.com", gadget, "Namespaced",
			`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"properties":{"size":{"type":"integer"}}}}}}}`),
			// versions with one schema are checked as the spec's
			[]string{`spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields`}},
		{"a bad x-kubernetes-validations rule", crd("gadgets.example.com", "example.com", gadget, "Namespaced",
			`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.size >"}],"properties":{"size":{"type":"integer"}}}}}}}`),
			[]string{`spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.size \u003e",`,
				`compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>'`}},
	} {
		code, st := request(t, ts, "POST", crds, tt.body)
		msg := fmt.Sprint(st["message"])
		if code != 422 || st["reason"] != "Invalid" {
			t.Errorf("%s: got %d %v, want 422", tt.name, code, st)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", tt.name, msg, w)
			}
		}
		if n := strings.Count(msg, "metadata.name:"); n > 1 {
			t.Errorf("%s: the name is reported %d times: %s", tt.name, n, msg)
		}
	}
}

// An update that adds a storage version counts in generation and adds
// the version to status.storedVersions; a stored version stays in
// spec.versions until status no longer lists it; a status write changes
// neither the spec nor the generation (I.1).
func TestStoredVersionsAndGeneration_I1(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	path := crds + "/widgets.example.com"
	if code, got := request(t, ts, "POST", crds, crd("widgets.example.com", "example.com", `"plural":"widgets","kind":"Widget"`, "Namespaced", version("v1", true))); code != 201 {
		t.Fatalf("create: %d %v", code, got)
	}
	versions := func(vs ...string) string { return `{"spec":{"versions":[` + strings.Join(vs, ",") + `]}}` }
	code, got := request(t, ts, "PATCH", path, versions(version("v1", false), version("v2", true)))
	if code != 200 || at(got, "metadata", "generation") != float64(2) || !reflect.DeepEqual(at(got, "status", "storedVersions"), []any{"v1", "v2"}) {
		t.Fatalf("add v2: %d generation %v storedVersions %v", code, at(got, "metadata", "generation"), at(got, "status", "storedVersions"))
	}
	// A label is no change of the spec.
	if code, got := request(t, ts, "PATCH", path, `{"metadata":{"labels":{"a":"b"}},"status":{"storedVersions":["v9"]}}`); code != 200 ||
		at(got, "metadata", "generation") != float64(2) || !reflect.DeepEqual(at(got, "status", "storedVersions"), []any{"v1", "v2"}) {
		t.Fatalf("label: %d %v", code, got)
	}
	code, got = request(t, ts, "PATCH", path, versions(version("v2", true)))
	want := `status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions`
	if code != 422 || !strings.Contains(fmt.Sprint(got["message"]), want) {
		t.Fatalf("drop v1: got %d %v, want 422 %q", code, got["message"], want)
	}
	code, got = request(t, ts, "PATCH", path+"/status", `{"spec":{"scope":"Cluster"},"status":{"storedVersions":["v2"]}}`)
	if code != 200 || at(got, "spec", "scope") != "Namespaced" || at(got, "metadata", "generation") != float64(2) ||
		!reflect.DeepEqual(at(got, "status", "storedVersions"), []any{"v2"}) {
		t.Fatalf("status: %d %v", code, got)
	}
	if code, got := request(t, ts, "PATCH", path, versions(version("v2", true))); code != 200 || at(got, "metadata", "generation") != float64(3) {
		t.Fatalf("drop v1 once migrated: %d %v", code, got)
	}
	// No stored version at all is the storage version again: kube's
	// defaults fill it.
	if code, got := request(t, ts, "PATCH", path+"/status", `{"status":{"storedVersions":[]}}`); code != 200 ||
		!reflect.DeepEqual(at(got, "status", "storedVersions"), []any{"v2"}) {
		t.Fatalf("empty storedVersions: %d %v", code, got)
	}
}

// startControllers runs the API server's CRD controllers against ts until
// the test ends.
func startControllers(t *testing.T, ts *apiservertest.Server) {
	t.Helper()
	stop, err := server.StartAPIExtensionsControllers(context.Background(), ts.Config, ts.API.OwnerOf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// condition returns the status, reason and message of the condition typ
// of the CRD name, "" when it has none.
func condition(t *testing.T, ts *apiservertest.Server, name, typ string) (status, reason, message string) {
	t.Helper()
	_, got := request(t, ts, "GET", crds+"/"+name, "")
	conds, _ := at(got, "status", "conditions").([]any)
	for _, c := range conds {
		if c, _ := c.(map[string]any); c["type"] == typ {
			return fmt.Sprint(c["status"]), fmt.Sprint(c["reason"]), fmt.Sprint(c["message"])
		}
	}
	return "", "", ""
}

// waitCondition waits for the condition typ of the CRD name to have
// status.
func waitCondition(t *testing.T, ts *apiservertest.Server, name, typ, status string) (reason, message string) {
	t.Helper()
	testwait.For(t, 30*time.Second, name+" "+typ+"="+status, func() (bool, string) {
		s, r, m := condition(t, ts, name, typ)
		reason, message = r, m
		return s == status, s + " " + r
	})
	return reason, message
}

// The controllers accept a CRD's names and establish it; a second CRD of
// the group that asks for a name in use gets NamesAccepted False with
// kube's reason and message, and is not established (I.1).
func TestConditions_I1(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	startControllers(t, ts)
	if code, got := request(t, ts, "POST", crds, crd("widgets.example.com", "example.com", `"plural":"widgets","kind":"Widget","shortNames":["wd"]`, "Namespaced", version("v1", true))); code != 201 {
		t.Fatalf("create: %d %v", code, got)
	}
	if reason, msg := waitCondition(t, ts, "widgets.example.com", "NamesAccepted", "True"); reason != "NoConflicts" || msg != "no conflicts found" {
		t.Errorf("NamesAccepted: %s %q", reason, msg)
	}
	if reason, _ := waitCondition(t, ts, "widgets.example.com", "Established", "True"); reason != "InitialNamesAccepted" {
		t.Errorf("Established: %s", reason)
	}
	_, got := request(t, ts, "GET", crds+"/widgets.example.com", "")
	if names := at(got, "status", "acceptedNames"); !reflect.DeepEqual(names, map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": []any{"wd"}}) {
		t.Errorf("acceptedNames: %v", names)
	}
	// Once established, the scope no longer changes.
	if code, got := request(t, ts, "PATCH", crds+"/widgets.example.com", `{"spec":{"scope":"Cluster"}}`); code != 422 ||
		!strings.Contains(fmt.Sprint(got["message"]), `spec.scope: Invalid value: "Cluster": field is immutable`) {
		t.Errorf("scope change: %d %v", code, got["message"])
	}

	if code, got := request(t, ts, "POST", crds, crd("gizmos.example.com", "example.com", `"plural":"gizmos","kind":"Gizmo","shortNames":["wd"]`, "Namespaced", version("v1", true))); code != 201 {
		t.Fatalf("create gizmos: %d %v", code, got)
	}
	if reason, msg := waitCondition(t, ts, "gizmos.example.com", "NamesAccepted", "False"); reason != "ShortNamesConflict" || msg != `"wd" is already in use` {
		t.Errorf("gizmos NamesAccepted: %s %q", reason, msg)
	}
	if status, reason, msg := condition(t, ts, "gizmos.example.com", "Established"); status != "False" || reason != "NotAccepted" || msg != "not all names are accepted" {
		t.Errorf("gizmos Established: %s %s %q", status, reason, msg)
	}
}

// A deleted CRD is Terminating with the cleanup finalizer, which the CRD
// finalizer removes once its custom resources are gone (none are served
// here), and the CRD goes (I.1).
func TestDeletionWithTheFinalizer_I1(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	// Without the controllers the CRD stays, marked.
	if code, got := request(t, ts, "POST", crds, crd("widgets.example.com", "example.com", `"plural":"widgets","kind":"Widget"`, "Cluster", version("v1", true))); code != 201 {
		t.Fatalf("create: %d %v", code, got)
	}
	// Its preconditions are checked as kube's CRD storage checks them.
	for _, p := range []struct{ body, want string }{
		{`{"preconditions":{"uid":"u-1"}}`, `precondition failed: UID in precondition: u-1, UID in object meta: `},
		{`{"preconditions":{"resourceVersion":"1"}}`, `precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: `},
	} {
		code, got := request(t, ts, "DELETE", crds+"/widgets.example.com", p.body)
		want := `Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io "widgets.example.com": ` + p.want
		if code != 409 || !strings.HasPrefix(fmt.Sprint(got["message"]), want) {
			t.Errorf("delete with %s: got %d %v, want 409 %q", p.body, code, got["message"], want)
		}
	}
	code, got := request(t, ts, "DELETE", crds+"/widgets.example.com", "")
	if code != 200 || !reflect.DeepEqual(at(got, "metadata", "finalizers"), []any{"customresourcecleanup.apiextensions.k8s.io"}) ||
		at(got, "metadata", "deletionTimestamp") == nil || at(got, "metadata", "generation") != float64(1) {
		t.Fatalf("delete: %d %v", code, got)
	}
	if status, reason, _ := condition(t, ts, "widgets.example.com", "Terminating"); status != "True" || reason != "InstanceDeletionPending" {
		t.Fatalf("Terminating: %s %s", status, reason)
	}
	startControllers(t, ts)
	testwait.For(t, 30*time.Second, "the CRD gone", func() (bool, string) {
		code, got := request(t, ts, "GET", crds+"/widgets.example.com", "")
		return code == 404, fmt.Sprint(code, " ", at(got, "status", "conditions"))
	})

	// Established, its deletion finds no custom resources and ends too.
	if code, got := request(t, ts, "POST", crds, crd("gadgets.example.com", "example.com", `"plural":"gadgets","kind":"Gadget"`, "Namespaced", version("v1", true))); code != 201 {
		t.Fatalf("create gadgets: %d %v", code, got)
	}
	waitCondition(t, ts, "gadgets.example.com", "Established", "True")
	if code, got := request(t, ts, "DELETE", crds+"/gadgets.example.com", ""); code != 200 {
		t.Fatalf("delete gadgets: %d %v", code, got)
	}
	testwait.For(t, 30*time.Second, "gadgets gone", func() (bool, string) {
		code, got := request(t, ts, "GET", crds+"/gadgets.example.com", "")
		return code == 404, fmt.Sprint(code, " ", at(got, "status", "conditions"))
	})
}

// A format kube does not know is a warning; kubectl get prints kube's
// columns for CRDs; a deletecollection removes a CRD at once, without the
// cleanup finalizer, as kube's generic store does (I.1).
func TestWarningsTableAndDeleteCollection_I1(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	body := crd("gadgets.example.com", "example.com", `"plural":"gadgets","kind":"Gadget"`, "Cluster",
		`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"when":{"type":"string","format":"sometime"}}}}}}}`)
	code, header, data := rt.DoHeader(t, ts, "POST", crds, body, nil)
	if code != 201 || !reflect.DeepEqual(header.Values("Warning"), []string{`299 - "unrecognized format \"sometime\""`}) {
		t.Fatalf("create: %d %q %s", code, header.Values("Warning"), data)
	}
	code, data = rt.Do(t, ts, "GET", crds+"/gadgets.example.com", "", map[string]string{"Accept": rt.TableAccept})
	var table struct {
		ColumnDefinitions []struct{ Name string }
		Rows              []struct{ Cells []any }
	}
	if err := json.Unmarshal(data, &table); err != nil || code != 200 || len(table.Rows) != 1 {
		t.Fatalf("table: %d %s", code, data)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if got, want := strings.Join(columns, ","), "Name,Scope,Versions,Created At,Group,Kind,ShortNames,Established"; got != want {
		t.Errorf("columns: got %s, want %s", got, want)
	}
	if cells := table.Rows[0].Cells; len(cells) != 8 || cells[1] != "Cluster" || cells[2] != "v1(storage)" || cells[7] != false {
		t.Errorf("cells: %v", cells)
	}
	code, got := request(t, ts, "DELETE", crds, "")
	if items, _ := got["items"].([]any); code != 200 || len(items) != 1 {
		t.Fatalf("deletecollection: %d %v", code, got)
	}
	if code, _ := request(t, ts, "GET", crds+"/gadgets.example.com", ""); code != 404 {
		t.Errorf("after deletecollection: got %d, want 404", code)
	}
}
