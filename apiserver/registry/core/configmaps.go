package core

import (
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// ConfigMaps: their validation (D.5) and table; the checks of their data
// that Secrets share.

func configMapResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Singular: "configmap", Namespaced: true,
		ShortNames: []string{"cm"}, ValidateName: apivalidation.NameIsDNSSubdomain, Validate: validateConfigMap, Table: configMapTable}
}

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

var configMapTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]}, apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		cm := obj.(*corev1.ConfigMap)
		// Binary keys count too.
		return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), apiserver.Age(cm.CreationTimestamp, now)}
	},
}
