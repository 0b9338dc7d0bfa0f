package resource

import (
	"bytes"
	"encoding/json"
	"reflect"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// goFieldNames renders a resource.k8s.io value in JSON as kube-apiserver
// shows its internal form in a message: the group's structs by their Go
// field names, empty fields included, an embedded ObjectMeta's fields in
// line; other types (metadata, quantities, raw parameters) as JSON.
type goFieldNames struct{ v reflect.Value }

var (
	resourcePkg    = reflect.TypeFor[resourcev1.ResourceClaimSpec]().PkgPath()
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	marshalerType  = reflect.TypeFor[json.Marshaler]()
)

func (g goFieldNames) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	err := writeGoNames(&buf, g.v)
	return buf.Bytes(), err
}

func writeGoNames(buf *bytes.Buffer, v reflect.Value) error {
	switch {
	case v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		if v.Kind() == reflect.Pointer {
			return writeGoNames(buf, v.Elem())
		}
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeGoNames(buf, v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case v.Kind() == reflect.Struct && v.Type().PkgPath() == resourcePkg && !v.Type().Implements(marshalerType):
		return writeGoStruct(buf, v)
	}
	b, err := json.Marshal(v.Interface())
	buf.Write(b)
	return err
}

func writeGoStruct(buf *bytes.Buffer, v reflect.Value) error {
	buf.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			buf.WriteByte(',')
		}
		first = false
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type == objectMetaType {
			b, err := json.Marshal(v.Field(i).Interface())
			if err != nil {
				return err
			}
			if inner := bytes.TrimSuffix(bytes.TrimPrefix(b, []byte("{")), []byte("}")); len(inner) > 0 {
				sep()
				buf.Write(inner)
			}
			continue
		}
		sep()
		name, _ := json.Marshal(f.Name)
		buf.Write(name)
		buf.WriteByte(':')
		if err := writeGoNames(buf, v.Field(i)); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}
