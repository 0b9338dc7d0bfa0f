// Package revision holds what the DaemonSet and StatefulSet controllers
// share about ControllerRevisions: the snapshot of a pod template they
// store, the hashes that name revisions and label pods, and the claiming
// and ordering of the revisions an owner controls
// (docs/kubernetes-behaviour.md, G.4 and G.5).
package revision

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/dump"

	"github.com/kubegate/kubegate/controllers/ownership"
)

// TemplateHash is the hash of a pod template and collision count that
// kube's DaemonSet and Deployment controllers put in names and labels:
// FNV-32a over the template's deep dump, then the collision count's four
// bytes (padded to eight), encoded with the safe alphabet.
func TemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// DataHash is the hash of a revision's data and collision count that the
// StatefulSet controller names revisions with: FNV-32 over the data, then
// the count in decimal.
func DataHash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// Name is the name of owner's revision with hash: the owner's name (cut
// to 223 characters) and the hash.
func Name(owner, hash string) string {
	if len(owner) > 223 {
		owner = owner[:223]
	}
	return owner + "-" + hash
}

// TemplatePatch is the data of a revision of obj, a workload whose
// spec.template is its pod template: a strategic merge patch that
// replaces the template, {"spec":{"template":{...,"$patch":"replace"}}}.
// Keys are sorted, so equal templates give equal bytes.
func TemplatePatch(obj any) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	t := raw.Spec.Template
	if t == nil {
		t = map[string]any{}
	}
	t["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
}

// Template returns the pod template a revision's data holds.
func Template(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var raw struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &raw); err != nil {
		return nil, fmt.Errorf("revision %s: %w", cr.Name, err)
	}
	return &raw.Spec.Template, nil
}

// SortByRevision sorts revisions by their revision number, oldest first,
// keeping the order of equal numbers.
func SortByRevision(revs []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revs, func(a, b *appsv1.ControllerRevision) int {
		switch {
		case a.Revision < b.Revision:
			return -1
		case a.Revision > b.Revision:
			return 1
		}
		return 0
	})
}

// Claim returns the revisions of all that owner controls once adoption
// and release are settled (ownership.Claim), rereading the owner with
// get before adopting.
func Claim(ctx context.Context, client kubernetes.Interface, owner metav1.Object, gvk schema.GroupVersionKind,
	selector labels.Selector, all []*appsv1.ControllerRevision, get func(ctx context.Context) (metav1.Object, error)) ([]*appsv1.ControllerRevision, error) {
	patch := func(ctx context.Context, ns, name string, body []byte) error {
		_, err := client.AppsV1().ControllerRevisions(ns).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		return err
	}
	return ownership.Claim(ctx, owner, gvk, selector, all, ownership.Recheck(owner, get), patch)
}

// Max returns the highest revision number of revs, 0 for none.
func Max(revs []*appsv1.ControllerRevision) int64 {
	var m int64
	for _, r := range revs {
		m = max(m, r.Revision)
	}
	return m
}
