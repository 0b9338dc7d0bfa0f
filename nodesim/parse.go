package nodesim

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseLabels parses "k=v,k2=v2" (as in kubectl label) into a map; ""
// gives nil. Keys and values must be valid label keys and values.
func ParseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("label %q: want key=value", kv)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("label %q: key given twice", k)
		}
		m[k] = v
	}
	if err := validateLabels(m); err != nil {
		return nil, err
	}
	return m, nil
}

func validateLabels(m map[string]string) error {
	for k, v := range m {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("label %s value %q: %s", k, v, errs[0])
		}
	}
	return nil
}

// ParseTaints parses "key=value:Effect,key:Effect" (as in kubectl taint)
// into taints; "" gives nil. Effect is NoSchedule, PreferNoSchedule or
// NoExecute.
func ParseTaints(s string) ([]corev1.Taint, error) {
	if s == "" {
		return nil, nil
	}
	var taints []corev1.Taint
	seen := map[string]bool{}
	for _, spec := range strings.Split(s, ",") {
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q: want key[=value]:Effect", spec)
		}
		k, v, _ := strings.Cut(kv, "=")
		t := corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}
		if err := validateTaint(t); err != nil {
			return nil, err
		}
		if seen[k+":"+effect] {
			return nil, fmt.Errorf("taint %q: key and effect given twice", spec)
		}
		seen[k+":"+effect] = true
		taints = append(taints, t)
	}
	return taints, nil
}

func validateTaint(t corev1.Taint) error {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return fmt.Errorf("taint key %q: %s", t.Key, errs[0])
	}
	if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
		return fmt.Errorf("taint %s value %q: %s", t.Key, t.Value, errs[0])
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return fmt.Errorf("taint %s effect %q: want NoSchedule, PreferNoSchedule or NoExecute", t.Key, t.Effect)
}
