package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// TestStoredFormat: objects are stored in kube-apiserver's protobuf
// envelope; a value stored as JSON (as earlier versions did) is still
// served, listed, watched and updated, and its next write stores protobuf.
func TestStoredFormat(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	pods := ts.clientset(t, false).CoreV1().Pods("default")

	if _, err := pods.Create(ctx, testPod("new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kv, err := ts.store.Get(ctx, Key(podsGVR, "default", "new"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(kv.Value, protobufPrefix) {
		t.Fatalf("stored value starts %q, want the protobuf envelope %q", kv.Value[:min(len(kv.Value), 8)], protobufPrefix)
	}

	old := testPod("old")
	old.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	old.Namespace, old.UID = "default", "old-uid"
	data, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := ts.store.Create(ctx, Key(podsGVR, "default", "old"), data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != "old-uid" || got.ResourceVersion != strconv.FormatInt(rev, 10) || got.Spec.Containers[0].Image != old.Spec.Containers[0].Image {
		t.Fatalf("JSON value: got uid %q, resourceVersion %q, image %q; want %q, %d, %q",
			got.UID, got.ResourceVersion, got.Spec.Containers[0].Image, old.UID, rev, old.Spec.Containers[0].Image)
	}
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].Name != "new" || list.Items[1].Name != "old" {
		t.Fatalf("list: got %d items, want new and old", len(list.Items))
	}

	got.Labels = map[string]string{"moved": "yes"}
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kv, err = ts.store.Get(ctx, Key(podsGVR, "default", "old"))
	if err != nil {
		t.Fatal(err)
	}
	var back corev1.Pod
	if err := UnmarshalStored(kv.Value, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(kv.Value, protobufPrefix) || back.Labels["moved"] != "yes" || back.UID != "old-uid" {
		t.Fatalf("after update: protobuf %v, labels %v, uid %q; want protobuf with moved=yes and the old uid",
			bytes.HasPrefix(kv.Value, protobufPrefix), back.Labels, back.UID)
	}
}

// TestUnmarshalStored decodes both stored formats into a typed object.
func TestUnmarshalStored(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	res, _ := ts.registry().get(podsGVR)
	pod := testPod("app")
	pod.UID = "app-uid"
	proto, err := ts.encodeStored(res, pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	withKind, _ := json.Marshal(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: pod.ObjectMeta, Spec: pod.Spec})
	bare, _ := json.Marshal(&corev1.Pod{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec})
	tests := []struct {
		name    string
		data    []byte
		into    runtime.Object
		wantErr bool
	}{
		{name: "protobuf", data: proto, into: &corev1.Pod{}},
		{name: "JSON with kind", data: withKind, into: &corev1.Pod{}},
		{name: "JSON without kind", data: bare, into: &corev1.Pod{}},
		{name: "truncated protobuf", data: proto[:len(proto)/2], into: &corev1.Pod{}, wantErr: true},
		{name: "not JSON", data: []byte("{"), into: &corev1.Pod{}, wantErr: true},
		{name: "no protobuf type", data: proto, into: &unstructured.Unstructured{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := UnmarshalStored(tt.data, tt.into)
			if tt.wantErr {
				if err == nil {
					t.Fatal("got no error, want one")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := tt.into.(*corev1.Pod)
			if got.Name != "app" || got.UID != "app-uid" || len(got.Spec.Containers) != 1 {
				t.Fatalf("got name %q, uid %q, %d containers; want app, app-uid, 1", got.Name, got.UID, len(got.Spec.Containers))
			}
		})
	}
}
