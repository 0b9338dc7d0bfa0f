package protometa

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// object is what the generated code gives every kind.
type object interface {
	metav1.Object
	Marshal() ([]byte, error)
}

func richPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", GenerateName: "web-", Namespace: "default", UID: "6e0f4c1a",
			Generation: 3, CreationTimestamp: metav1.Unix(1700000000, 0),
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "u1"},
				{APIVersion: "v1", Kind: "Node", Name: "n", UID: "u2"}},
			Finalizers: []string{"a/b", "c/d"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}},
			NodeName: "node-1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
}

// The result is what the generated marshaller writes for the object with
// its resourceVersion set, for the kinds the API server serves.
func TestWithResourceVersionMatchesMarshal(t *testing.T) {
	t.Parallel()
	cases := map[string]object{
		"pod":           richPod(),
		"empty pod":     &corev1.Pod{},
		"configmap":     &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"}, Data: map[string]string{"k": "v"}},
		"node":          &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}}},
		"secret":        &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"k": []byte("v")}, Type: corev1.SecretTypeOpaque},
		"clusterrole":   &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}},
		"priorityclass": &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Value: 10},
		"replace":       &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "17"}},
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			for _, rv := range []string{"42", "", "123456789012345678901234567890"} {
				raw, err := obj.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				it, err := WithResourceVersion(raw, rv)
				if err != nil {
					t.Fatalf("WithResourceVersion: %v", err)
				}
				old := obj.GetResourceVersion()
				obj.SetResourceVersion(rv)
				want, _ := obj.Marshal()
				obj.SetResourceVersion(old)
				if got := it.Append(nil); !bytes.Equal(got, want) {
					t.Errorf("rv %q: got %x, want %x", rv, got, want)
				}
				if it.Size() != len(want) {
					t.Errorf("rv %q: Size() = %d, want %d", rv, it.Size(), len(want))
				}
				var buf bytes.Buffer
				if n, err := it.WriteTo(&buf); err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
					t.Errorf("rv %q: WriteTo wrote %d bytes (%v), not the %d of Append", rv, n, err, len(want))
				}
			}
		})
	}
}

// Encodings a decoder would read differently from the generated
// marshaller's are refused.
func TestWithResourceVersionRefusesNonCanonical(t *testing.T) {
	t.Parallel()
	meta := func(fields ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bytes.Join(fields, nil))
	}
	str := func(num protowire.Number, v string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	cases := map[string][]byte{
		"truncated":                 {0x0a, 0x05, 0x0a},
		"bad tag":                   {0x00},
		"metadata twice":            append(meta(str(1, "a")), meta(str(6, "9"))...),
		"metadata fields unordered": meta(str(7, "uid"), str(1, "a")),
		"object fields unordered":   append(append(meta(str(1, "a")), str(3, "x")...), str(2, "y")...),
		"metadata not a message":    protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := WithResourceVersion(raw, "1"); !errors.Is(err, ErrNotCanonical) {
				t.Errorf("got %v, want ErrNotCanonical", err)
			}
		})
	}
}

// FuzzWithResourceVersionMatchesMarshal holds the result to the generated
// marshaller's bytes for any pod it can encode.
func FuzzWithResourceVersionMatchesMarshal(f *testing.F) {
	seed, _ := richPod().Marshal()
	f.Add(seed, "42")
	f.Add([]byte{}, "1")
	f.Fuzz(func(t *testing.T, data []byte, rv string) {
		var pod corev1.Pod
		if pod.Unmarshal(data) != nil {
			return
		}
		raw, err := pod.Marshal()
		if err != nil {
			return
		}
		it, err := WithResourceVersion(raw, rv)
		if err != nil {
			t.Fatalf("WithResourceVersion of a marshalled pod: %v", err)
		}
		pod.ResourceVersion = rv
		want, _ := pod.Marshal()
		if got := it.Append(nil); !bytes.Equal(got, want) {
			t.Fatalf("got %x, want %x", got, want)
		}
	})
}

// FuzzWithResourceVersionDecodes holds the result, for any input it
// accepts, to decoding as the input with the resourceVersion set.
func FuzzWithResourceVersionDecodes(f *testing.F) {
	seed, _ := richPod().Marshal()
	f.Add(seed, "42")
	f.Add([]byte{0x0a, 0x00, 0x12, 0x00}, "7")
	f.Fuzz(func(t *testing.T, raw []byte, rv string) {
		it, err := WithResourceVersion(raw, rv)
		if err != nil {
			return
		}
		var want corev1.Pod
		if want.Unmarshal(raw) != nil {
			return
		}
		want.ResourceVersion = rv
		var got corev1.Pod
		if err := got.Unmarshal(it.Append(nil)); err != nil {
			t.Fatalf("the result does not decode: %v", err)
		}
		if !reflect.DeepEqual(&got, &want) {
			t.Fatalf("decodes as %+v, want %+v", got.ObjectMeta, want.ObjectMeta)
		}
	})
}
