package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What an update of a pod (not of its subresources) may change (D.5).

// podUpdatableFields is the list kube's refusal names, in its words.
var podUpdatableFields = strings.Join([]string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}, ",")

// withUpdatableFrom returns a copy of spec p with what an update may
// change put back from the stored spec o, and refuses a change of the
// node selector that does not only add labels.
func withUpdatableFrom(p, o *corev1.PodSpec, specPath *field.Path) (*corev1.PodSpec, field.ErrorList) {
	m := p.DeepCopy()
	var errs field.ErrorList
	// kube rebuilds the container lists, so an empty one becomes nil.
	if len(m.Containers) == 0 {
		m.Containers = nil
	}
	if len(m.InitContainers) == 0 {
		m.InitContainers = nil
	}
	for i := range m.Containers {
		m.Containers[i].Image = o.Containers[i].Image
	}
	for i := range m.InitContainers {
		m.InitContainers[i].Image = o.InitContainers[i].Image
	}
	m.ActiveDeadlineSeconds = o.ActiveDeadlineSeconds
	m.SchedulingGates = o.SchedulingGates
	m.Tolerations = o.Tolerations
	if g := o.TerminationGracePeriodSeconds; g != nil && *g < 0 && m.TerminationGracePeriodSeconds != nil && *m.TerminationGracePeriodSeconds == 1 {
		m.TerminationGracePeriodSeconds = g
	}
	if len(o.SchedulingGates) > 0 && !apiequality.Semantic.DeepEqual(m.NodeSelector, o.NodeSelector) {
		for k, v := range o.NodeSelector {
			if nv, ok := m.NodeSelector[k]; !ok || nv != v {
				errs = append(errs, field.Invalid(specPath.Child("nodeSelector"), m.NodeSelector, "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
				break
			}
		}
		m.NodeSelector = o.NodeSelector
	}
	return m, errs
}

// validatePodUpdate allows a pod's spec to change only in container images,
// a shorter or new activeDeadlineSeconds, added tolerations (or changed
// tolerationSeconds), removed scheduling gates, a negative grace period
// raised to 1 and, while the pod is gated, added node selector labels.
// Anything else is one Forbidden error on spec whose detail ends with a
// diff of the two specs.
func validatePodUpdate(obj, old runtime.Object) field.ErrorList {
	p := &obj.(*corev1.Pod).Spec
	// kube defaults what it reads from storage; a pod stored by an older
	// kubegate may lack defaults the new spec has.
	o := old.(*corev1.Pod).Spec.DeepCopy()
	DefaultPodSpec(o)
	defaultPodOnly(o)
	defaultPriority(o)
	specPath := field.NewPath("spec")
	for _, cs := range []struct {
		new, old []corev1.Container
		path     *field.Path
	}{{p.Containers, o.Containers, specPath.Child("containers")}, {p.InitContainers, o.InitContainers, specPath.Child("initContainers")}} {
		// A new image is checked by validatePod; kube checks it here
		// again but answers each error once.
		if len(cs.new) != len(cs.old) {
			return field.ErrorList{field.Forbidden(cs.path, "pod updates may not add or remove containers")}
		}
	}

	var errs field.ErrorList
	adsPath := specPath.Child("activeDeadlineSeconds")
	switch {
	case p.ActiveDeadlineSeconds != nil && (*p.ActiveDeadlineSeconds < 0 || *p.ActiveDeadlineSeconds > math.MaxInt32):
		return append(errs, field.Invalid(adsPath, *p.ActiveDeadlineSeconds, validation.InclusiveRangeError(0, math.MaxInt32)))
	case p.ActiveDeadlineSeconds != nil && o.ActiveDeadlineSeconds != nil && *p.ActiveDeadlineSeconds > *o.ActiveDeadlineSeconds:
		return append(errs, field.Invalid(adsPath, *p.ActiveDeadlineSeconds, "must be less than or equal to previous value"))
	case p.ActiveDeadlineSeconds == nil && o.ActiveDeadlineSeconds != nil:
		errs = append(errs, field.Invalid(adsPath, p.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	if !onlyAddedTolerations(p.Tolerations, o.Tolerations) {
		errs = append(errs, field.Forbidden(specPath.Child("tolerations"), "existing toleration can not be modified except its tolerationSeconds"))
	}
	errs = append(errs, onlyDeletedGates(p.SchedulingGates, o.SchedulingGates, specPath.Child("schedulingGates"))...)

	if apiequality.Semantic.DeepEqual(p, o) {
		return errs
	}
	// Put back what may change, then compare what is left.
	m, nsErrs := withUpdatableFrom(p, o, specPath)
	errs = append(errs, nsErrs...)
	if !apiequality.Semantic.DeepEqual(m, o) {
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", podUpdatableFields, podSpecDiff(o, m))))
	}
	return errs
}

// onlyAddedTolerations reports whether every old toleration is still there,
// up to its tolerationSeconds.
func onlyAddedTolerations(tolerations, old []corev1.Toleration) bool {
	for _, ot := range old {
		found := false
		for _, t := range tolerations {
			ot.TolerationSeconds = t.TolerationSeconds
			if reflect.DeepEqual(ot, t) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func onlyDeletedGates(gates, old []corev1.PodSchedulingGate, path *field.Path) field.ErrorList {
	last := map[string]int{}
	for i, g := range gates {
		last[g.Name] = i
	}
	for _, g := range old {
		delete(last, g.Name)
	}
	// kube reports each new gate once, at its last index, in Go's random
	// map order; kubegate in index order.
	var errs field.ErrorList
	for i, g := range gates {
		if j, ok := last[g.Name]; ok && j == i {
			errs = append(errs, field.Forbidden(path.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// podSpecDiff is the unified diff kube appends to its refusal. kube renders
// each spec as indented JSON of its internal PodSpec type, which has the
// same fields in the same order as corev1.PodSpec but no JSON tags: every
// field appears, under its Go name, and embedded structs are flattened.
// specJSON writes that form from the corev1 types.
func podSpecDiff(old, updated *corev1.PodSpec) string {
	var a, b bytes.Buffer
	if err := specJSON(&a, reflect.ValueOf(*old)); err != nil {
		return fmt.Sprintf("error generating diff: %v", err)
	}
	if err := specJSON(&b, reflect.ValueOf(*updated)); err != nil {
		return fmt.Sprintf("error generating diff: %v", err)
	}
	return diff.Diff(json.RawMessage(a.Bytes()), json.RawMessage(b.Bytes()))
}

var (
	marshalerType = reflect.TypeFor[json.Marshaler]()
	corev1Pkg     = reflect.TypeFor[corev1.PodSpec]().PkgPath()
)

// specJSON writes v as encoding/json would if the structs of package corev1
// had no field tags. Values of other packages (metav1, resource quantities,
// intstr) keep their own JSON form, as kube's internal types share them.
func specJSON(buf *bytes.Buffer, v reflect.Value) error {
	t := v.Type()
	if t.PkgPath() != corev1Pkg && (t.Implements(marshalerType) || t.Kind() == reflect.Struct) {
		data, err := json.Marshal(v.Interface())
		buf.Write(data)
		return err
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return specJSON(buf, v.Elem())
	case reflect.Struct:
		buf.WriteByte('{')
		first := true
		if err := structFields(buf, v, &first); err != nil {
			return err
		}
		buf.WriteByte('}')
		return nil
	case reflect.Slice:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			data, err := json.Marshal(v.Interface())
			buf.Write(data)
			return err
		}
		buf.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := specJSON(buf, v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case reflect.Map:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			name, _ := json.Marshal(k.String())
			buf.Write(name)
			buf.WriteByte(':')
			if err := specJSON(buf, v.MapIndex(k)); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	}
	data, err := json.Marshal(v.Interface())
	buf.Write(data)
	return err
}

// structFields writes the exported fields of a corev1 struct, flattening
// embedded structs as encoding/json does with untagged embedded fields.
func structFields(buf *bytes.Buffer, v reflect.Value, first *bool) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		fv := v.Field(i)
		if f.Anonymous {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				if fv.Type().PkgPath() == corev1Pkg {
					if err := structFields(buf, fv, first); err != nil {
						return err
					}
					continue
				}
				// A struct of another package (metav1.ObjectMeta) is
				// flattened with its own field names.
				data, err := json.Marshal(fv.Interface())
				if err != nil {
					return err
				}
				if inner := bytes.TrimSuffix(bytes.TrimPrefix(data, []byte("{")), []byte("}")); len(inner) > 0 {
					if !*first {
						buf.WriteByte(',')
					}
					*first = false
					buf.Write(inner)
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if !*first {
			buf.WriteByte(',')
		}
		*first = false
		name, _ := json.Marshal(f.Name)
		buf.Write(name)
		buf.WriteByte(':')
		if err := specJSON(buf, fv); err != nil {
			return err
		}
	}
	return nil
}
