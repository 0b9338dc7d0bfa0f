package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A delete that removes the object at once answers with a success Status
// naming it, except for the kinds kube-apiserver answers with the object
// (pods, namespaces, services, service accounts); an object that stays for
// its finalizers is answered with itself, with 200 (D.7).
func TestDeleteAnswers(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cs := ts.clientset(t, false)
	core := cs.CoreV1()
	cm, err := core.ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role, err := cs.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fin := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fin", Finalizers: []string{"example.com/x"}}}
	if _, err := core.ConfigMaps("default").Create(ctx, fin, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Pods("default").Create(ctx, testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	del := func(path string) (int, map[string]any, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodDelete, ts.http.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: %v in %s", path, err, body)
		}
		return resp.StatusCode, m, string(body)
	}
	for _, tc := range []struct {
		path, body string
	}{
		{"/api/v1/namespaces/default/configmaps/cm",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"cm","kind":"configmaps","uid":"` + string(cm.UID) + `"}}` + "\n"},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/r",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"r","group":"rbac.authorization.k8s.io","kind":"roles","uid":"` + string(role.UID) + `"}}` + "\n"},
	} {
		if code, _, body := del(tc.path); code != http.StatusOK || body != tc.body {
			t.Errorf("DELETE %s: got %d %s\nwant 200 %s", tc.path, code, body, tc.body)
		}
	}
	for _, tc := range []struct {
		path, kind string
		check      func(meta map[string]any, obj map[string]any) bool
	}{
		{"/api/v1/namespaces/default/configmaps/fin", "ConfigMap", func(m, _ map[string]any) bool { return m["deletionTimestamp"] != nil }},
		{"/api/v1/namespaces/default/serviceaccounts/sa", "ServiceAccount", func(m, _ map[string]any) bool { return m["name"] == "sa" }},
		// A pod deleted at once looks as a zero grace period leaves it.
		{"/api/v1/namespaces/default/pods/p", "Pod", func(m, _ map[string]any) bool {
			return m["deletionTimestamp"] != nil && m["deletionGracePeriodSeconds"] == 0.0 && m["generation"] == 2.0
		}},
		{"/api/v1/namespaces/gone", "Namespace", func(m, obj map[string]any) bool {
			return m["deletionTimestamp"] != nil && obj["status"].(map[string]any)["phase"] == "Terminating"
		}},
	} {
		code, obj, body := del(tc.path)
		m, _ := obj["metadata"].(map[string]any)
		if code != http.StatusOK || obj["kind"] != tc.kind || m == nil || !tc.check(m, obj) {
			t.Errorf("DELETE %s: got %d %s, want 200 and the %s as kube-apiserver answers", tc.path, code, body, tc.kind)
		}
	}
}
