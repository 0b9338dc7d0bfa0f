package core_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const (
	pvsPath  = "/api/v1/persistentvolumes"
	pvcsPath = "/api/v1/namespaces/default/persistentvolumeclaims"
	scsPath  = "/apis/storage.k8s.io/v1/storageclasses"
)

var mergePatch = map[string]string{"Content-Type": "application/merge-patch+json"}

// A PersistentVolume is defaulted, Pending since its creation, protected
// by its finalizer, and keeps its source and mode (D.17).
func TestPersistentVolumes_D17(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	code, body := rt.Do(t, ts, http.MethodPost, pvsPath, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"v"},`+
		`"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}`, nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	pv := rt.Object(t, body)
	rt.WantFields(t, pv, map[string]string{"spec.persistentVolumeReclaimPolicy": `"Retain"`, "spec.volumeMode": `"Filesystem"`,
		"spec.hostPath.type": `""`, "status.phase": `"Pending"`, "metadata.finalizers": `["kubernetes.io/pv-protection"]`})
	meta := pv["metadata"].(map[string]any)
	if got := pv["status"].(map[string]any)["lastPhaseTransitionTime"]; got != meta["creationTimestamp"] {
		t.Errorf("lastPhaseTransitionTime %v, want the creation time %v", got, meta["creationTimestamp"])
	}

	code, body = rt.Do(t, ts, http.MethodPost, pvsPath, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"w"},`+
		`"spec":{"capacity":{"storage":"0"},"accessModes":["ReadWriteOncePod","ReadWriteMany"],"hostPath":{"path":"/a"},"nfs":{"server":"s","path":"/b"}}}`, nil)
	rt.WantInvalid(t, code, body, "PersistentVolume", "w",
		rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "spec.accessModes", "Forbidden: may not use ReadWriteOncePod with other access modes"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.capacity[storage]", `Invalid value: "0": must be greater than zero`),
		rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "spec.nfs", "Forbidden: may not specify more than 1 volume type"))

	code, body = rt.Do(t, ts, http.MethodPatch, pvsPath+"/v", `{"spec":{"volumeMode":"Block"}}`, mergePatch)
	rt.WantInvalid(t, code, body, "PersistentVolume", "v", rt.Cause(metav1.CauseTypeFieldValueInvalid, "volumeMode", `Invalid value: "Block": field is immutable`))

	code, body = rt.Do(t, ts, http.MethodDelete, pvsPath+"/v", "", nil)
	if code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, body)
	}
	if rows := rt.Rows(t, ts, pvsPath); len(rows) != 1 || rt.Object(t, []byte(`{"c":`+rows[0]+`}`))["c"].([]any)[4] != "Terminating" {
		t.Errorf("a volume being deleted: %v, want it Terminating", rows)
	}
}

// A claim gets the default class and its finalizer, is Pending, and once
// bound may grow only if its class allows expansion (D.17).
func TestPersistentVolumeClaims_D17(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	rt.Create(t, ts, [2]string{scsPath, `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"std",` +
		`"annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"example.com/disk"}`})
	claim := func(name, rest string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"` + name + `"},` +
			`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}` + rest + `}}`
	}
	code, body := rt.Do(t, ts, http.MethodPost, pvcsPath, claim("data", ""), nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.storageClassName": `"std"`, "spec.volumeMode": `"Filesystem"`,
		"status.phase": `"Pending"`, "metadata.finalizers": `["kubernetes.io/pvc-protection"]`})
	code, body = rt.Do(t, ts, http.MethodPost, pvcsPath, claim("none", `,"storageClassName":""`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create without a class: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.storageClassName": `""`})

	for _, tt := range []struct {
		name, source string
		want         map[string]string
	}{
		{"snap", `,"dataSource":{"apiGroup":"snapshot.storage.k8s.io","kind":"VolumeSnapshot","name":"s"}`,
			map[string]string{"spec.dataSourceRef": `{"apiGroup":"snapshot.storage.k8s.io","kind":"VolumeSnapshot","name":"s"}`}},
		{"widget", `,"dataSource":{"kind":"Widget","name":"w"}`, map[string]string{"spec.dataSource": "", "spec.dataSourceRef": ""}},
		{"other-ns", `,"dataSourceRef":{"kind":"PersistentVolumeClaim","name":"c","namespace":"other"}`, map[string]string{"spec.dataSourceRef": ""}},
	} {
		code, body := rt.Do(t, ts, http.MethodPost, pvcsPath, claim(tt.name, tt.source), nil)
		if code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", tt.name, code, body)
		}
		rt.WantFields(t, rt.Object(t, body), tt.want)
	}

	grow := `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`
	if code, body := rt.Do(t, ts, http.MethodPatch, pvcsPath+"/data/status", `{"status":{"phase":"Bound","capacity":{"storage":"1Gi"}}}`, mergePatch); code != http.StatusOK {
		t.Fatalf("bind: %d %s", code, body)
	}
	code, body = rt.Do(t, ts, http.MethodPatch, pvcsPath+"/data", grow, mergePatch)
	if st := rt.Object(t, body); code != http.StatusForbidden || st["message"] != `persistentvolumeclaims "data" is forbidden: `+
		`only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize` {
		t.Errorf("grow with a class that does not expand: %d %v", code, st["message"])
	}
	code, body = rt.Do(t, ts, http.MethodPatch, pvcsPath+"/data", `{"spec":{"resources":{"requests":{"storage":"1Mi"}}}}`, mergePatch)
	rt.WantInvalid(t, code, body, "PersistentVolumeClaim", "data",
		rt.Cause(metav1.CauseType(field.ErrorTypeForbidden), "spec.resources.requests.storage", "Forbidden: field can not be less than status.capacity"))
	if code, body := rt.Do(t, ts, http.MethodPatch, scsPath+"/std", `{"allowVolumeExpansion":true}`, mergePatch); code != http.StatusOK {
		t.Fatalf("allow expansion: %d %s", code, body)
	}
	if code, body := rt.Do(t, ts, http.MethodPatch, pvcsPath+"/data", grow, mergePatch); code != http.StatusOK {
		t.Errorf("grow with a class that expands: %d %s", code, body)
	}
}
