package apiserver

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// metadata.generation exists only for kinds with a spec kube counts, and
// moves only when the spec changes or a graceful deletion starts (D.1).
func TestGenerationCountsSpecChanges_D1(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()

	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 7}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Generation != 0 {
		t.Errorf("configmap generation = %d, want 0 (kube keeps none for kinds without a spec)", cm.Generation)
	}

	pods := cs.CoreV1().Pods("default")
	p, err := pods.Create(ctx, testPod("gen"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Generation != 1 {
		t.Errorf("new pod generation = %d, want 1", p.Generation)
	}
	p, err = pods.Patch(ctx, "gen", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Generation != 1 {
		t.Errorf("generation after a label change = %d, want 1", p.Generation)
	}
	p, err = pods.Patch(ctx, "gen", types.StrategicMergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":60}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Generation != 2 {
		t.Errorf("generation after a spec change = %d, want 2", p.Generation)
	}
}

// Every create and update records its writer in managedFields, named by
// fieldManager or else by the User-Agent up to its first "/", with the
// defaults the server filled in and without what the server sets itself
// (a pod's priority, its status) (D.1).
func TestWritesRecordTheirFieldManager_D1(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cfg := ts.restConfig(false)
	cfg.UserAgent = "deployer/1.2 (linux)"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	p, err := cs.CoreV1().Pods("default").Create(ctx, testPod("owned"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ManagedFields) != 1 {
		t.Fatalf("managedFields = %+v, want one entry", p.ManagedFields)
	}
	mf := p.ManagedFields[0]
	if mf.Manager != "deployer" || mf.Operation != metav1.ManagedFieldsOperationUpdate || mf.APIVersion != "v1" {
		t.Errorf("managedFields entry = %s %s %s, want deployer Update v1", mf.Manager, mf.Operation, mf.APIVersion)
	}
	var fields map[string]any
	if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
		t.Fatal(err)
	}
	spec := fields["f:spec"].(map[string]any)
	for _, owned := range []string{"f:restartPolicy", "f:dnsPolicy", "f:schedulerName", "f:enableServiceLinks"} {
		if _, ok := spec[owned]; !ok {
			t.Errorf("managedFields lack the defaulted %s: %s", owned, mf.FieldsV1.GetRawBytes())
		}
	}
	for _, notOwned := range []string{"f:priority", "f:preemptionPolicy"} {
		if _, ok := spec[notOwned]; ok {
			t.Errorf("managedFields give the writer %s, which the server sets: %s", notOwned, mf.FieldsV1.GetRawBytes())
		}
	}
	if _, ok := fields["f:status"]; ok {
		t.Errorf("managedFields give the writer the status: %s", mf.FieldsV1.GetRawBytes())
	}

	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": "1"}},
		metav1.CreateOptions{FieldManager: "tool"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != "tool" {
		t.Errorf("managedFields = %+v, want one entry of manager tool", cm.ManagedFields)
	}
	cm.Data["b"] = "2"
	cm, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]string{}
	for _, mf := range cm.ManagedFields {
		managers[mf.Manager] = string(mf.FieldsV1.GetRawBytes())
	}
	if len(managers) != 2 || managers["tool"] != `{"f:data":{".":{},"f:a":{}}}` || managers["deployer"] != `{"f:data":{"f:b":{}}}` {
		t.Errorf("managedFields after an update by another manager = %v, want tool owning data.a and deployer data.b", managers)
	}
}

// The items of a list carry no apiVersion and kind, as kube-apiserver
// encodes typed lists.
func TestListItemsCarryNoKind(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cs := ts.clientset(t, false)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/configmaps").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind, APIVersion string
		Items            []map[string]any
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "ConfigMapList" || list.APIVersion != "v1" || len(list.Items) != 1 {
		t.Fatalf("list = %s", raw)
	}
	if _, ok := list.Items[0]["kind"]; ok {
		t.Errorf("a list item has a kind: %s", raw)
	}
	if _, ok := list.Items[0]["apiVersion"]; ok {
		t.Errorf("a list item has an apiVersion: %s", raw)
	}
}

// An update's generation is counted after admission, as kube-apiserver's
// update strategies count it: a spec that admission restores to what it
// was is no change (D.1, D.8).
func TestGenerationCountsAfterAdmission_D8(t *testing.T) {
	t.Parallel()
	toleration := corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists}
	restore := func(c *Config) {
		c.Admission = []Admission{AdmissionFunc(func(_ context.Context, a *AdmissionAttributes) error {
			if pod, ok := a.Object.(*corev1.Pod); ok && len(pod.Spec.Tolerations) == 0 {
				pod.Spec.Tolerations = []corev1.Toleration{toleration}
			}
			return nil
		})}
	}
	ts := newTestServer(t, restore)
	pods := ts.clientset(t, false).CoreV1().Pods("default")
	ctx := context.Background()
	p, err := pods.Create(ctx, testPod("g"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Tolerations = nil // admission puts it back
	p.Labels["x"] = "y"
	p, err = pods.Update(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Generation != 1 || len(p.Spec.Tolerations) != 1 {
		t.Errorf("generation %d, tolerations %v; want 1 and admission's toleration", p.Generation, p.Spec.Tolerations)
	}
}
