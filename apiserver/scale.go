package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"
)

// The scale subresource (autoscaling/v1 Scale) of Deployments,
// ReplicaSets, StatefulSets and ReplicationControllers: a view of the
// object's spec.replicas, status.replicas and selector through which
// kubectl scale and autoscalers change the replicas alone
// (docs/kubernetes-behaviour.md, G.2).

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// replicasField is where every scalable kind keeps its replicas, by the
// group version of the object's managedFields entries.
var replicasField = managedfields.ResourcePathMappings{
	appsv1.SchemeGroupVersion.String(): fieldpath.MakePathOrDie("spec", "replicas"),
	coreGV.String():                    fieldpath.MakePathOrDie("spec", "replicas"),
}

// scaleOf returns obj's Scale: its identity, its spec.replicas and
// status.replicas, and its selector written as a string (a label selector
// for the apps kinds, a map for ReplicationControllers).
func scaleOf(res *Resource, obj runtime.Object) (*autoscalingv1.Scale, error) {
	var spec *int32
	var status int32
	var sel string
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		n, st, selector, err := res.ScalePaths.read(o)
		if err != nil {
			return nil, err
		}
		spec, status, sel = &n, st, selector
	case *appsv1.Deployment:
		spec, status = o.Spec.Replicas, o.Status.Replicas
		s, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
		if err != nil {
			return nil, err
		}
		sel = s.String()
	case *appsv1.ReplicaSet:
		spec, status = o.Spec.Replicas, o.Status.Replicas
		s, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
		if err != nil {
			return nil, err
		}
		sel = s.String()
	case *appsv1.StatefulSet:
		spec, status = o.Spec.Replicas, o.Status.Replicas
		s, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
		if err != nil {
			return nil, err
		}
		sel = s.String()
	case *corev1.ReplicationController:
		spec, status = o.Spec.Replicas, o.Status.Replicas
		sel = labels.SelectorFromSet(o.Spec.Selector).String()
	default:
		return nil, fmt.Errorf("%T has no scale", obj)
	}
	acc, _ := meta.Accessor(obj)
	sc := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: acc.GetName(), Namespace: acc.GetNamespace(), UID: acc.GetUID(),
			ResourceVersion: acc.GetResourceVersion(), CreationTimestamp: acc.GetCreationTimestamp()},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: sel},
	}
	if spec != nil {
		sc.Spec.Replicas = *spec
	}
	sc.SetGroupVersionKind(scaleGVK)
	return sc, nil
}

// admitAsScale makes attrs, of an update of the scale subresource, admit
// the autoscaling/v1 Scales of its objects, as kube-apiserver admits a
// scale update (D.13), and reports whether it did: false when the kind
// has no Scale of its own.
func admitAsScale(res *Resource, attrs *AdmissionAttributes) bool {
	sc, err := scaleOf(res, attrs.Object)
	if err != nil {
		return false
	}
	old, err := scaleOf(res, attrs.OldObject)
	if err != nil {
		return false
	}
	attrs.Kind, attrs.Object, attrs.OldObject = scaleGVK, sc, old
	return true
}

// setAdmittedReplicas sets on obj the replicas of the Scale mutating
// admission returned in attrs.
func setAdmittedReplicas(res *Resource, obj runtime.Object, attrs *AdmissionAttributes) {
	if sc, ok := attrs.Object.(*autoscalingv1.Scale); ok {
		setReplicas(res, obj, sc.Spec.Replicas)
	}
}

// setReplicas sets obj's spec.replicas.
func setReplicas(res *Resource, obj runtime.Object, n int32) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		res.ScalePaths.setReplicas(o, n)
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &n
	case *corev1.ReplicationController:
		o.Spec.Replicas = &n
	}
}

// scaleGR is the resource a scale request's errors name, as kube's do:
// "replicasets/scale" in the resource's group.
func (q *request) scaleGR() schema.GroupResource {
	return schema.GroupResource{Group: q.res.GVR.Group, Resource: q.res.GVR.Resource + "/scale"}
}

// storageKey is the etcd key kube-apiserver keeps the object under, which
// its storage errors name.
func (q *request) storageKey() string {
	resource := q.res.GVR.Resource
	if resource == "replicationcontrollers" {
		resource = "controllers"
	}
	return "/registry/" + resource + "/" + q.ns + "/" + q.name
}

// serveScale answers GET, PUT and PATCH on RESOURCE/NAME/scale.
func (q *request) serveScale() error {
	switch q.verb {
	case "get":
		kv, err := q.s.cfg.Store.Get(q.ctx(), q.key(q.name))
		if err != nil {
			return storeErr(err, q.gr(), q.name)
		}
		obj, err := q.s.decodeKV(q.res, kv)
		if err != nil {
			return err
		}
		return q.respondScale(obj)
	case "update":
		return q.updateScale()
	case "patch":
		return q.patchScale()
	}
	return methodNotAllowed()
}

// scaleResource describes Scales for the answers' conversions (a Table,
// metadata only).
var scaleResource = &Resource{GVR: autoscalingv1.SchemeGroupVersion.WithResource("scales"), Kind: "Scale", Namespaced: true,
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Description: objectMetaDoc["name"]},
			{Name: "Desired", Type: "integer", Description: autoscalingv1.ScaleSpec{}.SwaggerDoc()["replicas"]},
			{Name: "Available", Type: "integer", Description: autoscalingv1.ScaleStatus{}.SwaggerDoc()["replicas"]},
			AgeColumn,
		},
		Cells: func(obj runtime.Object, now time.Time) []any {
			sc := obj.(*autoscalingv1.Scale)
			return []any{sc.Name, int64(sc.Spec.Replicas), int64(sc.Status.Replicas), Age(sc.CreationTimestamp, now)}
		},
	}}

// respondScale answers with obj's Scale.
func (q *request) respondScale(obj runtime.Object) error {
	sc, err := scaleOf(q.res, obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	out, err := q.negotiate(acceptOptions{convert: true})
	if err != nil {
		return err
	}
	converted, err := q.s.convert(q.r, scaleResource, out, sc)
	if err != nil {
		return err
	}
	q.s.write(q.w, out, http.StatusOK, converted)
	return nil
}

func (q *request) updateScale() error {
	if _, err := q.negotiate(acceptOptions{convert: true}); err != nil {
		return err
	}
	directive, err := fieldValidation(q.r)
	if err != nil {
		return err
	}
	info, err := q.s.bodyInfo(q.r)
	if err != nil {
		return err
	}
	data, err := readBody(q.r)
	if err != nil {
		return err
	}
	d, err := q.s.decode(info, data, scaleGVK, &autoscalingv1.Scale{})
	if err != nil {
		return err
	}
	if err := checkFields(q.w, directive, scaleGVK, d.strictErr); err != nil {
		return err
	}
	body, ok := d.obj.(*autoscalingv1.Scale)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", d.obj))
	}
	if ns := body.Namespace; ns != "" && ns != q.ns {
		return errNamespaceMismatch()
	}
	if body.Name != q.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", body.Name, q.name))
	}
	return q.changeScale(func(old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		// kube takes the UID of a Scale sent whole as a precondition of
		// the write, checked by its storage before anything else.
		if body.UID != "" && body.UID != old.UID {
			return nil, apierrors.NewConflict(q.gr(), q.name, fmt.Errorf(
				"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %v, UID in object meta: %v",
				q.storageKey(), body.UID, old.UID))
		}
		return body.DeepCopy(), nil
	}, false)
}

func (q *request) patchScale() error {
	pt, patch, directive, err := q.patchRequest()
	if err != nil {
		return err
	}
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		return q.changeScale(func(old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			return q.applyScalePatch(pt, directive, old, patch)
		}, false)
	case types.ApplyPatchType:
		return q.applyScale(patch)
	}
	return unsupportedPatchType()
}

// applyScalePatch applies a JSON, merge or strategic merge patch to a
// Scale.
func (q *request) applyScalePatch(pt types.PatchType, directive string, old *autoscalingv1.Scale, patch []byte) (*autoscalingv1.Scale, error) {
	var buf bytes.Buffer
	if err := q.s.json.Serializer.Encode(old, &buf); err != nil {
		return nil, err
	}
	var patched []byte
	var err error
	switch pt {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(patch); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		patched, err = p.Apply(buf.Bytes())
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(buf.Bytes(), patch)
	default:
		patched, err = strategicpatch.StrategicMergePatch(buf.Bytes(), patch, &autoscalingv1.Scale{})
	}
	switch {
	case err == nil:
	case pt == types.JSONPatchType:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "", 0, false)
	default:
		return nil, apierrors.NewBadRequest("invalid JSON patch")
	}
	d, err := q.s.decode(q.s.json, patched, scaleGVK, &autoscalingv1.Scale{})
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch did not produce a valid Scale: %v", err))
	}
	if err := checkFields(q.w, directive, scaleGVK, d.strictErr); err != nil {
		return nil, err
	}
	sc, ok := d.obj.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", d.obj))
	}
	return sc, nil
}

// applyScale is a server-side apply of a Scale.
func (q *request) applyScale(body []byte) error {
	manager := q.r.URL.Query().Get("fieldManager")
	if manager == "" {
		return optionsInvalid(q.r, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
	}
	force := q.r.URL.Query().Get("force") == "true"
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	applied := &unstructured.Unstructured{}
	if err := applied.UnmarshalJSON(data); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error decoding apply configuration: %v", err))
	}
	if gvk := applied.GroupVersionKind(); gvk != scaleGVK {
		return apierrors.NewBadRequest(fmt.Sprintf("the apply configuration is a %s, not a %s", gvk, scaleGVK))
	}
	fm, err := q.scaleFieldManager()
	if err != nil {
		return err
	}
	return q.changeScale(func(old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		out, err := fm.Apply(old, applied.DeepCopy(), manager, force)
		if err != nil {
			if apierrors.IsConflict(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
				return nil, err
			}
			return nil, apierrors.NewBadRequest(err.Error())
		}
		sc := &autoscalingv1.Scale{}
		if u, ok := out.(*unstructured.Unstructured); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sc); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			return sc, nil
		}
		if s, ok := out.(*autoscalingv1.Scale); ok {
			return s, nil
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", out))
	}, true)
}

// scaleFieldManager tracks the fields of Scales, built once.
func (q *request) scaleFieldManager() (*managedfields.FieldManager, error) {
	s := q.s
	const key = "scale"
	if fm, ok := s.fieldManagers.Load(key); ok {
		return fm.(*managedfields.FieldManager), nil
	}
	// The server's type converter knows the kinds that can be applied,
	// not Scale; a Scale has no lists, so the one deduced from its Go type
	// tracks it as kube's does.
	fm, err := managedfields.NewDefaultFieldManager(managedfields.NewDeducedTypeConverter(), s.scheme, s.scheme, s.scheme,
		scaleGVK, scaleGVK.GroupVersion(), "scale", nil)
	if err != nil {
		return nil, err
	}
	got, _ := s.fieldManagers.LoadOrStore(key, fm)
	return got.(*managedfields.FieldManager), nil
}

// changeScale updates the object's replicas to those of the Scale change
// makes of its current Scale, as kube's scale subresource does: the
// Scale's fields are tracked as the scale subresource's in the object's
// managedFields (applied: change has tracked them), the new replicas
// validated, the Scale's UID and resourceVersion taken as preconditions,
// and the object then updated and validated as a whole.
func (q *request) changeScale(change func(old *autoscalingv1.Scale) (*autoscalingv1.Scale, error), applied bool) error {
	manager := fieldManagerName(q.r)
	fm, err := q.scaleFieldManager()
	if err != nil {
		return err
	}
	obj, err := q.guaranteedUpdate(func(old runtime.Object) (runtime.Object, error) {
		acc, err := meta.Accessor(old)
		if err != nil {
			return nil, err
		}
		oldScale, err := scaleOf(q.res, old)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		handler := managedfields.NewScaleHandler(acc.GetManagedFields(), q.res.GVR.GroupVersion(), q.res.replicasField())
		if oldScale.ManagedFields, err = handler.ToSubresource(); err != nil {
			return nil, err
		}
		sc, err := change(oldScale.DeepCopy())
		if err != nil {
			return nil, err
		}
		if sc == nil {
			return nil, apierrors.NewBadRequest("nil update passed to Scale")
		}
		if !applied {
			tracked, ok := fm.UpdateNoErrors(oldScale, sc, manager).(*autoscalingv1.Scale)
			if ok {
				sc = tracked
			}
		}
		if errs := validateScale(sc); len(errs) > 0 {
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: scaleGVK.Group, Kind: scaleGVK.Kind}, acc.GetName(), errs)
		}
		if sc.UID != "" && sc.UID != acc.GetUID() {
			return nil, apierrors.NewConflict(q.scaleGR(), acc.GetName(),
				//lint:ignore ST1005 kube's message, word for word
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", sc.UID, acc.GetUID()))
		}
		setReplicas(q.res, old, sc.Spec.Replicas)
		acc.SetResourceVersion(sc.ResourceVersion)
		entries, err := handler.ToParent(sc.ManagedFields)
		if err != nil {
			return nil, err
		}
		acc.SetManagedFields(entries)
		return old, nil
	}, "")
	if err != nil {
		return err
	}
	return q.respondScale(obj)
}

// validateScale checks what a Scale may say: its managed fields and
// replicas not below zero.
func validateScale(sc *autoscalingv1.Scale) field.ErrorList {
	errs := metav1validation.ValidateManagedFields(sc.ManagedFields, field.NewPath("metadata", "managedFields"))
	if sc.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), int64(sc.Spec.Replicas), "must be greater than or equal to 0"))
	}
	return errs
}
