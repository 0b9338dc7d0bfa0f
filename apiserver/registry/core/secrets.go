package core

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Secrets: their defaults, validation (D.5), selectable fields and table.

func secretResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Singular: "secret", Namespaced: true,
		ValidateName: apivalidation.NameIsDNSSubdomain, Fields: secretFields, Defaults: defaultSecret, Validate: validateSecret, Table: secretTable}
}

func secretFields(obj runtime.Object, set fields.Set) {
	set["type"] = string(obj.(*corev1.Secret).Type)
}

// defaultSecret defaults the type and folds stringData into data (D.6), as
// decoding does in kube-apiserver: kube never stores stringData, its keys
// overwrite data's, and a read shows them base64-encoded under data like
// the rest.
func defaultSecret(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
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

var secretTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
		apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		s := obj.(*corev1.Secret)
		return []any{s.Name, string(s.Type), int64(len(s.Data)), apiserver.Age(s.CreationTimestamp, now)}
	},
}
