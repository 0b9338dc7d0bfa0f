package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
)

// answer sends body with method to path on srv and decodes the answer as
// far as it is a JSON object (a 204 decodes to nil).
func answer(t *testing.T, srv *apiservertest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, data := rt.Do(t, srv, method, path, body, nil)
	var st map[string]any
	_ = json.Unmarshal(data, &st)
	return code, st
}

// Logs, exec, attach and port-forward check the pod and its container as
// kube-apiserver does before it calls a kubelet (D.9).
func TestPodConnectAnswers_D9(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	cs := srv.Client
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("unbound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	two := testPod("two")
	two.Spec.NodeName = "gone"
	two.Spec.Containers = append(two.Spec.Containers, corev1.Container{Name: "side", Image: "x"})
	if _, err := pods.Create(ctx, two, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onNode := testPod("running")
	onNode.Spec.NodeName = "node-1"
	if _, err := pods.Create(ctx, onNode, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, method, path string
		code               int
		message            string
	}{
		{"the log of a pod not yet bound is empty", "GET", "unbound/log", 204, ""},
		{"a container the pod does not have", "GET", "unbound/log?container=zz", 400, "container zz is not valid for pod unbound"},
		{"exec in a pod not yet bound", "POST", "unbound/exec?command=ls&stdout=true", 400, "pod unbound does not have a host assigned"},
		{"attach to a pod not yet bound", "GET", "unbound/attach?stdout=true", 400, "pod unbound does not have a host assigned"},
		{"port-forward to a pod not yet bound", "GET", "unbound/portforward?ports=80", 400, "pod unbound does not have a host assigned"},
		{"no container named in a pod of two", "GET", "two/log", 400, "a container name must be specified for pod two, choose one of: [app side]"},
		{"exec names no container in a pod of two", "POST", "two/exec?command=ls", 400, "a container name must be specified for pod two, choose one of: [app side]"},
		{"a node that does not exist", "GET", "two/log?container=side", 404, `pods "gone" not found`},
		{"a pod that does not exist", "GET", "missing/log", 404, `pods "missing" not found`},
		{"exec without an upgrade", "POST", "running/exec?command=ls&stdout=true", 400, "Upgrade request required"},
		{"a verb the log does not take", "POST", "running/log", 405, "the server does not allow this method on the requested resource"},
	}
	for _, tt := range tests {
		code, st := answer(t, srv, tt.method, "/api/v1/namespaces/default/pods/"+tt.path, "")
		if code != tt.code || (tt.message != "" && st["message"] != tt.message) {
			t.Errorf("%s: got %d %q, want %d %q", tt.name, code, st["message"], tt.code, tt.message)
		}
	}

	code, body := rt.Do(t, srv, http.MethodGet, "/api/v1/namespaces/default/pods/running/log", "", map[string]string{"Accept": "text/plain"})
	if code != 200 || !strings.Contains(string(body), `container "app" of pod default/running runs on the simulated node node-1`) {
		t.Errorf("log of a pod on a simulated node: %d %q", code, body)
	}
}

// An eviction deletes the pod, as a DELETE would without a disruption
// budget, and answers 201 (D.9).
func TestEviction_D9(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	cs := srv.Client
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, testPod("app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, st := answer(t, srv, "POST", "/api/v1/namespaces/default/pods/app/eviction",
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}`)
	if code != 400 || st["message"] != "name in URL does not match name in Eviction object" {
		t.Errorf("eviction of another name: %d %v", code, st)
	}
	code, st = answer(t, srv, "POST", "/api/v1/namespaces/default/pods/app/eviction?dryRun=All",
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"app"}}`)
	if code != 201 {
		t.Fatalf("dry-run eviction: %d %v", code, st)
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{}); err != nil {
		t.Fatalf("a dry-run eviction deleted the pod: %v", err)
	}
	code, st = answer(t, srv, "POST", "/api/v1/namespaces/default/pods/app/eviction",
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"app"},"deleteOptions":{"propagationPolicy":"Nope"}}`)
	if code != 422 || !strings.Contains(fmt.Sprint(st["message"]), `propagationPolicy: Unsupported value: "Nope"`) {
		t.Errorf("eviction with bad delete options: %d %v, want 422", code, st)
	}
	code, st = answer(t, srv, "POST", "/api/v1/namespaces/default/pods/app/eviction",
		`{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"app"}}`)
	if code != 201 || st["status"] != "Success" {
		t.Fatalf("eviction: %d %v", code, st)
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the evicted pod: got %v, want NotFound", err)
	}
}

// exec, attach and port-forward over a WebSocket come as a GET, and need
// the create a POST would need too, as in kube-apiserver (D.9).
func TestConnectOverGetNeedsCreate_D9(t *testing.T) {
	t.Parallel()
	onlyGet := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.Subresource == "exec" && a.Verb != "get" {
			return authz.NoOpinion, "", nil
		}
		return authz.Allow, "", nil
	})
	users := map[string]authn.User{"execer": {Name: "execer", Groups: []string{authn.AllAuthenticated}}}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(), apiservertest.WithUsers(users, onlyGet))
	if _, err := srv.Client.CoreV1().Pods("default").Create(context.Background(), testPod("app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, body := rt.Do(t, srv, http.MethodGet, "/api/v1/namespaces/default/pods/app/exec?command=ls&stdout=true", "",
		map[string]string{"Authorization": "Bearer execer", "Connection": "Upgrade", "Upgrade": "websocket"})
	if code != http.StatusForbidden {
		t.Errorf("exec over GET with only get on pods/exec: %d %s, want 403", code, body)
	}
}
