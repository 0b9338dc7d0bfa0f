package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"sigs.k8s.io/yaml"
)

// patchRequest negotiates the answer and reads what every PATCH carries:
// its patch type, its body and its fieldValidation directive.
func (q *request) patchRequest() (types.PatchType, []byte, string, error) {
	if _, err := q.negotiate(acceptOptions{convert: true}); err != nil {
		return "", nil, "", err
	}
	ct, _, err := mime.ParseMediaType(q.r.Header.Get("Content-Type"))
	if q.res.unstructuredKind() && (err != nil || !slices.Contains(unstructuredPatchTypes, ct)) {
		// No strategic merge patch: an unstructured kind has no patch
		// strategies, and kube's own handler refuses it.
		return "", nil, "", negotiation.NewUnsupportedMediaTypeError(unstructuredPatchTypes)
	}
	if err != nil {
		return "", nil, "", unsupportedPatchType()
	}
	patch, err := readBody(q.r)
	if err != nil {
		return "", nil, "", err
	}
	directive, err := fieldValidation(q.r)
	if err != nil {
		return "", nil, "", err
	}
	return types.PatchType(ct), patch, directive, nil
}

// unstructuredPatchTypes are the patches an unstructured kind takes.
var unstructuredPatchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}

func (q *request) patch() error {
	pt, patch, directive, err := q.patchRequest()
	if err != nil {
		return err
	}
	var obj runtime.Object
	code := http.StatusOK
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		obj, err = q.guaranteedUpdate(func(old runtime.Object) (runtime.Object, error) {
			return q.applyPatch(pt, directive, old, patch)
		}, fieldManagerName(q.r))
	case types.ApplyPatchType:
		obj, code, err = q.serverSideApply(patch)
	default:
		return unsupportedPatchType()
	}
	if err != nil {
		return err
	}
	return q.respond(code, obj)
}

// applyPatch applies a JSON, merge or strategic merge patch to old.
func (q *request) applyPatch(pt types.PatchType, directive string, old runtime.Object, patch []byte) (runtime.Object, error) {
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
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(buf.Bytes(), patch, q.s.newObject(q.res))
	}
	switch {
	case err == nil:
	case pt == types.JSONPatchType:
		// kube-apiserver answers any JSON patch that does not apply (a
		// failed test, an unknown op, a missing path) with a bare 422.
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "", 0, false)
	default:
		return nil, apierrors.NewBadRequest("invalid JSON patch")
	}
	d, err := q.s.decode(q.s.json, patched, q.res.gvk(), q.s.newObject(q.res))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch did not produce a valid %s: %v", q.res.Kind, err))
	}
	if err := q.coerce(&d); err != nil {
		return nil, err
	}
	if err := checkFields(q.w, directive, q.res.gvk(), d.strictErr); err != nil {
		return nil, err
	}
	return d.obj, nil
}

// serverSideApply merges an apply configuration into the object with
// managed-fields ownership, creating the object when it does not exist.
func (q *request) serverSideApply(body []byte) (runtime.Object, int, error) {
	query := q.r.URL.Query()
	manager := query.Get("fieldManager")
	if manager == "" {
		return nil, 0, optionsInvalid(q.r, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
	}
	force := query.Get("force") == "true"
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	applied := &unstructured.Unstructured{}
	if err := applied.UnmarshalJSON(data); err != nil {
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("error decoding apply configuration: %v", err))
	}
	if gvk := applied.GroupVersionKind(); gvk != q.res.gvk() {
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("the apply configuration is a %s, not a %s", gvk, q.res.gvk()))
	}
	if applied.GetName() != "" && applied.GetName() != q.name {
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", applied.GetName(), q.name))
	}
	if ns := applied.GetNamespace(); q.res.Namespaced && ns != "" && ns != q.ns {
		return nil, 0, errNamespaceMismatch()
	}
	fm, err := q.s.fieldManager(q.res, q.sub)
	if err != nil {
		return nil, 0, err
	}
	apply := func(live runtime.Object) (runtime.Object, error) {
		out, err := fm.Apply(live, applied.DeepCopy(), manager, force)
		if err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				return nil, err
			}
			// kube-apiserver answers the field manager's other errors (a
			// field the kind's schema lacks, such as the status of a
			// ConfigMap) as an error it knows nothing of: a 500 without a
			// reason (B.8).
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}}
		}
		return q.typed(out)
	}
	obj, err := q.guaranteedUpdate(apply, "")
	if !apierrors.IsNotFound(err) || q.sub != "" {
		return obj, http.StatusOK, err
	}
	live := q.s.newObject(q.res)
	acc, _ := meta.Accessor(live)
	acc.SetName(q.name)
	acc.SetNamespace(q.ns)
	created, err := apply(live)
	if err != nil {
		return nil, 0, err
	}
	dry, err := q.dryRun()
	if err != nil {
		return nil, 0, err
	}
	// An apply that creates is a create: kube-apiserver authorizes the
	// user for create as well as patch before it stores the object.
	if err := q.authorizeAs("create"); err != nil {
		return nil, 0, err
	}
	cacc, _ := meta.Accessor(created)
	cacc.SetNamespace(q.ns)
	cacc.SetName(q.name)
	obj, err = q.s.insert(q.ctx(), q.res, created, q.user(), dry, "") // apply has recorded its fields
	if apierrors.IsAlreadyExists(err) {
		obj, err = q.guaranteedUpdate(apply, "") // lost a race with another create
		return obj, http.StatusOK, err
	}
	return obj, http.StatusCreated, err
}

// typed converts an apply result to the resource's Go type.
func (q *request) typed(obj runtime.Object) (runtime.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || q.res.unstructuredKind() {
		obj.GetObjectKind().SetGroupVersionKind(q.res.gvk())
		return obj, nil
	}
	out := q.s.newObject(q.res)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, errors.New("convert apply result: " + err.Error())
	}
	out.GetObjectKind().SetGroupVersionKind(q.res.gvk())
	return out, nil
}
