package storage_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const (
	group = "/apis/storage.k8s.io/v1"
	scs   = group + "/storageclasses"
)

func class(name, annotations, rest string) string {
	meta := `"name":"` + name + `"`
	if annotations != "" {
		meta += `,"annotations":` + annotations
	}
	return `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{` + meta + `},"provisioner":"example.com/disk"` + rest + `}`
}

// A StorageClass takes kube's defaults, keeps its provisioner, parameters,
// policy and binding mode, and its list Table marks the newest default
// class (D.17).
func TestStorageClasses_D17(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	code, body := rt.Do(t, ts, http.MethodPost, scs, class("fast", "", `,"parameters":{"type":"ssd"}`), nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"reclaimPolicy": `"Delete"`, "volumeBindingMode": `"Immediate"`, "metadata.generation": ""})

	code, body = rt.Do(t, ts, http.MethodPatch, scs+"/fast", `{"provisioner":"example.com/other","parameters":{"type":"hdd"},"reclaimPolicy":"Retain"}`,
		map[string]string{"Content-Type": "application/merge-patch+json"})
	rt.WantInvalid(t, code, body, "StorageClass.storage.k8s.io", "fast",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "provisioner", "Invalid value: null: field is immutable"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "parameters", "Invalid value: null: field is immutable"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "reclaimPolicy", "Invalid value: null: field is immutable"))

	code, body = rt.Do(t, ts, http.MethodPost, scs,
		`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"bad"},"parameters":{"":"x"},"reclaimPolicy":"Recycle"}`, nil)
	rt.WantInvalid(t, code, body, "StorageClass.storage.k8s.io", "bad",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "parameters", `Invalid value: "": field can not be empty.`),
		rt.Cause(metav1.CauseTypeFieldValueNotSupported, "reclaimPolicy", `Unsupported value: "Recycle": supported values: "Delete", "Retain"`),
		rt.Cause(metav1.CauseTypeFieldValueRequired, "provisioner", "Required value"))

	const def = `{"storageclass.kubernetes.io/is-default-class":"true"}`
	rt.Create(t, ts, [2]string{scs, class("standard", def, "")}, [2]string{scs, class("a-default", def, "")})
	rows := rt.Rows(t, ts, scs)
	want := []string{"a-default (default)", "fast", "standard"}
	if len(rows) != len(want) {
		t.Fatalf("rows: %v", rows)
	}
	for i, w := range want {
		if got := rt.Object(t, []byte(`{"c":`+rows[i]+`}`))["c"].([]any)[0]; got != w {
			t.Errorf("row %d: got name %q, want %q", i, got, w)
		}
	}
}

// A CSIDriver is defaulted, its generation counts changes of its spec
// from none, and a VolumeAttachment's spec is fixed (D.17).
func TestCSIDriversAndAttachments_D17(t *testing.T) {
	t.Parallel()
	ts := apiservertest.Start(t)
	const drivers = group + "/csidrivers"
	code, body := rt.Do(t, ts, http.MethodPost, drivers, `{"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":"disk.example.com"}}`, nil)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"spec.attachRequired": "true", "spec.fsGroupPolicy": `"ReadWriteOnceWithFSType"`,
		"spec.volumeLifecycleModes": `["Persistent"]`, "spec.seLinuxMount": "false", "metadata.generation": ""})
	merge := map[string]string{"Content-Type": "application/merge-patch+json"}
	code, body = rt.Do(t, ts, http.MethodPatch, drivers+"/disk.example.com", `{"spec":{"podInfoOnMount":true}}`, merge)
	if code != http.StatusOK {
		t.Fatalf("patch: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"metadata.generation": "1"})

	const vas = group + "/volumeattachments"
	rt.Create(t, ts, [2]string{vas, `{"apiVersion":"storage.k8s.io/v1","kind":"VolumeAttachment","metadata":{"name":"a"},` +
		`"spec":{"attacher":"disk.example.com","nodeName":"n","source":{"persistentVolumeName":"v"}},"status":{"attached":true}}`})
	_, body = rt.Do(t, ts, http.MethodGet, vas+"/a", "", nil)
	rt.WantFields(t, rt.Object(t, body), map[string]string{"status": `{"attached":false}`})
	code, body = rt.Do(t, ts, http.MethodPatch, vas+"/a", `{"spec":{"nodeName":"m"}}`, merge)
	rt.WantInvalid(t, code, body, "VolumeAttachment.storage.k8s.io", "a", rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec", "Invalid value: null: field is immutable"))
	code, body = rt.Do(t, ts, http.MethodPatch, vas+"/a/status", `{"status":{"attached":true}}`, merge)
	if code != http.StatusOK {
		t.Fatalf("status: %d %s", code, body)
	}
	rt.WantFields(t, rt.Object(t, body), map[string]string{"status.attached": "true", "spec.nodeName": `"n"`})
}
