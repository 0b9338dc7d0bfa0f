package apiserver

import (
	"encoding/json"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ConfigMap and Secret validation (D.5).

// maxDataBytes bounds the values of a ConfigMap or a Secret together.
const maxDataBytes = corev1.MaxSecretSize

// immutableMsg is kube's detail for a change to an immutable object's data.
const immutableMsg = "field is immutable when `immutable` is set"

// sortedKeys returns m's keys in order. kube walks the maps in Go's random
// order, so with several bad keys its order of errors varies; kubegate's is
// one of those.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func configKey(path *field.Path, key string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path.Key(key), key, msg))
	}
	return errs
}

func validateConfigMap(obj, old runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	var errs field.ErrorList
	if old != nil {
		errs = immutableData(old.(*corev1.ConfigMap).Immutable, cm.Immutable, field.ErrorList{
			changed("data", cm.Data, old.(*corev1.ConfigMap).Data),
			changed("binaryData", cm.BinaryData, old.(*corev1.ConfigMap).BinaryData),
		})
	}
	size := 0
	for _, k := range sortedKeys(cm.Data) {
		errs = append(errs, configKey(field.NewPath("data"), k)...)
		if _, ok := cm.BinaryData[k]; ok {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, "duplicate of key present in binaryData"))
		}
		size += len(cm.Data[k])
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		errs = append(errs, configKey(field.NewPath("binaryData"), k)...)
		size += len(cm.BinaryData[k])
	}
	if size > maxDataBytes {
		// kube names no field here: the path prints as "[]".
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataBytes))
	}
	return errs
}

func validateSecret(obj, old runtime.Object) field.ErrorList {
	s := obj.(*corev1.Secret)
	var errs field.ErrorList
	if old != nil {
		o := old.(*corev1.Secret)
		errs = append(errs, apivalidation.ValidateImmutableField(s.Type, o.Type, field.NewPath("type"))...)
		errs = append(errs, immutableData(o.Immutable, s.Immutable, field.ErrorList{changed("data", s.Data, o.Data)})...)
	}
	data := field.NewPath("data")
	size := 0
	for _, k := range sortedKeys(s.Data) {
		errs = append(errs, configKey(data, k)...)
		size += len(s.Data[k])
	}
	if size > maxDataBytes {
		errs = append(errs, field.TooLong(data, "", maxDataBytes))
	}
	return append(errs, validateSecretType(s)...)
}

// validateSecretType checks the keys each built-in secret type requires.
func validateSecretType(s *corev1.Secret) field.ErrorList {
	data := field.NewPath("data")
	required := func(keys ...string) field.ErrorList {
		var errs field.ErrorList
		for _, k := range keys {
			errs = append(errs, field.Required(data.Key(k), ""))
		}
		return errs
	}
	jsonKey := func(key string) field.ErrorList {
		v, ok := s.Data[key]
		if !ok {
			return required(key)
		}
		if err := json.Unmarshal(v, &map[string]any{}); err != nil {
			return field.ErrorList{field.Invalid(data.Key(key), "<secret contents redacted>", err.Error())}
		}
		return nil
	}
	has := func(key string) bool { _, ok := s.Data[key]; return ok }
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			return field.ErrorList{field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), "")}
		}
	case corev1.SecretTypeDockercfg:
		return jsonKey(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		return jsonKey(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		if !has(corev1.BasicAuthUsernameKey) && !has(corev1.BasicAuthPasswordKey) {
			return required(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			return required(corev1.SSHAuthPrivateKey)
		}
	case corev1.SecretTypeTLS:
		var errs field.ErrorList
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if !has(k) {
				errs = append(errs, required(k)...)
			}
		}
		return errs
	}
	return nil
}

// changed is a Forbidden error on path when the data differs, else nil.
func changed(path string, v, old any) *field.Error {
	if reflect.DeepEqual(v, old) {
		return nil
	}
	return field.Forbidden(field.NewPath(path), immutableMsg)
}

// immutableData refuses, once the old object was made immutable, both
// making it mutable again and the data changes given.
func immutableData(oldImmutable, immutable *bool, dataChanges field.ErrorList) field.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	var errs field.ErrorList
	if immutable == nil || !*immutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
	}
	for _, e := range dataChanges {
		if e != nil {
			errs = append(errs, e)
		}
	}
	return errs
}
