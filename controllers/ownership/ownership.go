// Package ownership holds what every workload controller does with the
// objects it makes: it builds pods from a template with a controller
// reference to their owner, claims the objects its selector matches
// (adopting orphans and releasing those it no longer matches, as kube's
// controller reference manager does), and keeps expectations of the
// creations and deletions it has asked for and not yet seen in its caches
// (docs/kubernetes-behaviour.md, G.1).
package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// ControllerRef returns the owner reference a controller puts on what it
// makes: controller and blockOwnerDeletion set.
func ControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(),
		UID: owner.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}
}

// PodFromTemplate returns the pod a controller creates from template for
// owner: named by the API server from generateName "OWNER-" (the caller
// may set a name instead), with the template's labels, annotations,
// finalizers and spec, and a controller reference to owner.
func PodFromTemplate(template *corev1.PodTemplateSpec, owner metav1.Object, gvk schema.GroupVersionKind) *corev1.Pod {
	t := template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    owner.GetName() + "-",
			Namespace:       owner.GetNamespace(),
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{ControllerRef(owner, gvk)},
		},
		Spec: t.Spec,
	}
}

// Patcher writes a merge patch to one object of the claimed kind.
type Patcher func(ctx context.Context, namespace, name string, patch []byte) error

// Claim returns those of objs that owner controls once its claim is
// settled, as kube's controller reference manager decides:
//   - an object controlled by owner (by UID) stays owned if selector
//     matches it, and is released (its controller reference removed by
//     patch) if not, unless owner is being deleted;
//   - an orphan (no controller) that selector matches is adopted (a
//     controller reference added by patch, with the object's UID and
//     resourceVersion as preconditions so that a changed object is not
//     adopted on stale data), unless owner or the object is being
//     deleted;
//   - an object controlled by anything else is left alone.
//
// fresh, called before the first adoption, rereads owner from the API
// server and reports whether it is still the same live object (kube's
// RecheckDeletionTimestamp); a stale cache must not adopt. A failed patch
// is returned with the objects claimed so far.
func Claim[T metav1.Object](ctx context.Context, owner metav1.Object, gvk schema.GroupVersionKind, selector labels.Selector,
	objs []T, fresh func(ctx context.Context) (bool, error), patch Patcher) ([]T, error) {
	var out []T
	checked, live := false, false
	for _, o := range objs {
		ref := metav1.GetControllerOfNoCopy(o)
		matches := selector.Matches(labels.Set(o.GetLabels()))
		switch {
		case ref != nil && ref.UID == owner.GetUID():
			if matches || owner.GetDeletionTimestamp() != nil {
				out = append(out, o)
				continue
			}
			if o.GetDeletionTimestamp() != nil {
				continue
			}
			body := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, owner.GetUID(), o.GetUID())
			if err := patch(ctx, o.GetNamespace(), o.GetName(), []byte(body)); err != nil && !isGone(err) {
				return out, err
			}
		case ref == nil && matches && owner.GetDeletionTimestamp() == nil && o.GetDeletionTimestamp() == nil:
			if !checked {
				var err error
				if live, err = fresh(ctx); err != nil {
					return out, err
				}
				checked = true
			}
			if !live {
				continue
			}
			body, err := adoptPatch(owner, gvk, o.GetUID())
			if err != nil {
				return out, err
			}
			if err := patch(ctx, o.GetNamespace(), o.GetName(), body); err != nil {
				if isGone(err) {
					continue
				}
				return out, err
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// Recheck returns Claim's fresh for owner: get rereads owner from the API
// server, and owner is still the same live object when what it reads has
// owner's UID and is not being deleted.
func Recheck(owner metav1.Object, get func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		o, err := get(ctx)
		if err != nil {
			return false, err
		}
		return o.GetUID() == owner.GetUID() && o.GetDeletionTimestamp() == nil, nil
	}
}

// PodPatcher is the Patcher of pods through client (strategic merge
// patches).
func PodPatcher(client kubernetes.Interface) Patcher {
	return func(ctx context.Context, namespace, name string, patch []byte) error {
		_, err := client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}
}

// adoptPatch is the strategic merge patch that adds owner's controller
// reference to the object with UID uid.
func adoptPatch(owner metav1.Object, gvk schema.GroupVersionKind, uid types.UID) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{ControllerRef(owner, gvk)},
		"uid":             uid,
	}})
}

// Expectations counts, per controller key, the creations and deletions a
// controller has asked for and its caches have not shown yet. While any
// are outstanding the controller does not act on counts it knows to be
// stale (kube's ControllerExpectations, without their five-minute
// expiry: a key whose writes failed is lowered by the caller).
type Expectations struct {
	mu sync.Mutex
	m  map[string]*[2]int
}

// Expect records that add creations and del deletions are on their way
// for key, replacing what was expected before.
func (e *Expectations) Expect(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]*[2]int{}
	}
	e.m[key] = &[2]int{add, del}
}

// Observed records that one creation (created true) or deletion for key
// has been seen, or will never happen.
func (e *Expectations) Observed(key string, created bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[key]; x != nil {
		i := 1
		if created {
			i = 0
		}
		if x[i] > 0 {
			x[i]--
		}
	}
}

// Satisfied reports whether nothing is outstanding for key.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.m[key]
	return x == nil || (x[0] <= 0 && x[1] <= 0)
}

// Forget drops key, whose owner is gone.
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
