package apiserver

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ScalePaths say where an unstructured kind keeps what its scale
// subresource shows, as a CustomResourceDefinition's scale subresource
// names them: JSON paths such as ".spec.replicas" (I.2).
type ScalePaths struct {
	SpecReplicas, StatusReplicas string
	// LabelSelector is "" when the kind has none.
	LabelSelector string
}

func fieldPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// read returns the replicas and the selector of u, as kube reads them: a
// missing number is 0, one of another type an error.
func (p *ScalePaths) read(u *unstructured.Unstructured) (spec, status int32, selector string, err error) {
	if p == nil {
		return 0, 0, "", errors.New("the kind has no scale subresource")
	}
	n, _, err := unstructured.NestedInt64(u.Object, fieldPath(p.SpecReplicas)...)
	if err != nil {
		return 0, 0, "", err
	}
	st, _, err := unstructured.NestedInt64(u.Object, fieldPath(p.StatusReplicas)...)
	if err != nil {
		return 0, 0, "", err
	}
	if p.LabelSelector != "" {
		if selector, _, err = unstructured.NestedString(u.Object, fieldPath(p.LabelSelector)...); err != nil {
			return 0, 0, "", err
		}
	}
	return int32(n), int32(st), selector, nil
}

func (p *ScalePaths) setReplicas(u *unstructured.Unstructured, n int32) {
	if p != nil {
		_ = unstructured.SetNestedField(u.Object, int64(n), fieldPath(p.SpecReplicas)...)
	}
}

// replicasField is where r keeps its replicas, for the scale
// subresource's managedFields.
func (r *Resource) replicasField() managedfields.ResourcePathMappings {
	if r.ScalePaths == nil {
		return replicasField
	}
	return managedfields.ResourcePathMappings{r.GVR.GroupVersion().String(): fieldpath.MakePathOrDie(toAny(fieldPath(r.ScalePaths.SpecReplicas))...)}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
