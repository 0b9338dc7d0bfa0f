// Package cachetrim holds the transform the components' informers apply
// to what they keep.
package cachetrim

import "k8s.io/apimachinery/pkg/api/meta"

// StripManagedFields is an informer transform that drops an object's
// managedFields, as kube-scheduler's pod informer does: a component that
// never reads them keeps a large part of every object for nothing.
func StripManagedFields(obj any) (any, error) {
	if acc, err := meta.Accessor(obj); err == nil && acc.GetManagedFields() != nil {
		acc.SetManagedFields(nil)
	}
	return obj, nil
}
