// Package customresource turns a CustomResourceDefinition into the
// apiserver.Resource of each version it serves, with the behaviour
// kube-apiserver gives custom resources, taken from
// k8s.io/apiextensions-apiserver's own code: the structural schema,
// pruning and defaulting, the custom-resource strategy (what the server
// sets, the schema and CEL validation, the status subresource, the
// selectable fields) and the Table of the additional printer columns
// (docs/kubernetes-behaviour.md, I.2).
package customresource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	registry "k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/handler"

	"github.com/kubegate/kubegate/apiserver"
)

// verbs are the verbs kube-apiserver's discovery lists for a custom
// resource, in its order.
var verbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}

// terminatingVerbs are those of a definition being deleted.
var terminatingVerbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "watch"}

// Owner is the owner apiserver.Server.SetResources knows crd's resources
// by: its name.
func Owner(crd *apiextensionsv1.CustomResourceDefinition) string { return crd.Name }

// Resources returns the resources of crd's served versions, named by its
// accepted names, as kube-apiserver serves them once crd is
// established; a conversion webhook is reached as NewConverters(nil, nil)
// reaches it.
func Resources(crd *apiextensionsv1.CustomResourceDefinition) ([]*apiserver.Resource, error) {
	return ResourcesConverting(crd, nil)
}

// ResourcesConverting is Resources with the objects of a definition with
// conversion Webhook converted between its versions by conv's converter.
func ResourcesConverting(crd *apiextensionsv1.CustomResourceDefinition, conv Converters) ([]*apiserver.Resource, error) {
	storage, err := apihelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, err
	}
	convert, err := convertor(crd, conv)
	if err != nil {
		return nil, fmt.Errorf("custom resource %s: %w", crd.Name, err)
	}
	names := crd.Status.AcceptedNames
	storedAs := schema.GroupVersionKind{Group: crd.Spec.Group, Version: storage, Kind: names.Kind}
	tc, err := typeConverter(crd)
	if err != nil {
		return nil, fmt.Errorf("custom resource %s: type converter: %w", crd.Name, err)
	}
	equivalents, err := equivalentResources(crd)
	if err != nil {
		return nil, fmt.Errorf("custom resource %s: %w", crd.Name, err)
	}
	storedBy, err := storageOf(crd)
	if err != nil {
		return nil, fmt.Errorf("custom resource %s: %w", crd.Name, err)
	}
	var out []*apiserver.Resource
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		r, err := versionResource(crd, v)
		if err != nil {
			return nil, fmt.Errorf("custom resource %s version %s: %w", crd.Name, v.Name, err)
		}
		r.StoredAs, r.TypeConverter, r.Convertor = storedAs, tc, convert
		r.Equivalents, r.Storage = equivalents, storedBy
		if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating) {
			// Being deleted: its instances can go but no new one come.
			r.Verbs = terminatingVerbs
			gr := r.GVR.GroupResource()
			r.RefuseCreate = func(name string) error {
				return apierrors.NewForbidden(gr, name, errors.New("create not allowed while custom resource definition is terminating"))
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// equivalentResources are the resources of crd's versions, served or
// not, with their status and scale subresources, as kube-apiserver
// registers them for the admission plugins' matchPolicy Equivalent.
func equivalentResources(crd *apiextensionsv1.CustomResourceDefinition) (runtime.EquivalentResourceRegistry, error) {
	reg := runtime.NewEquivalentResourceRegistry()
	names := crd.Status.AcceptedNames
	for _, v := range crd.Spec.Versions {
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: names.Plural}
		kind := gvr.GroupVersion().WithKind(names.Kind)
		reg.RegisterKindFor(gvr, "", kind)
		subs, err := apihelpers.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return nil, err
		}
		if subs != nil && subs.Status != nil {
			reg.RegisterKindFor(gvr, "status", kind)
		}
		if subs != nil && subs.Scale != nil {
			reg.RegisterKindFor(gvr, "scale", autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
		}
	}
	return reg, nil
}

// storageOf names the storage kube-apiserver serves crd's objects from,
// which it keeps while the definition's UID, spec and accepted names
// stay, and tears down, ending its watches, when one of them changes.
func storageOf(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	data, err := json.Marshal([]any{crd.UID, crd.Spec, crd.Status.AcceptedNames})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// version is what one served version of a CRD needs besides its names.
type version struct {
	kind       schema.GroupVersionKind
	structural *structuralschema.Structural
	preserve   bool
	strategy   strategy
	status     statusStrategy
}

// strategy and statusStrategy are what the server calls of kube's
// custom-resource strategies, whose types are not exported.
type strategy interface {
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	WarningsOnCreate(ctx context.Context, obj runtime.Object) []string
	WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string
	GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error)
}

type statusStrategy interface {
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

func versionResource(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) (*apiserver.Resource, error) {
	names := crd.Status.AcceptedNames
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: names.Plural}
	ver := &version{kind: gvr.GroupVersion().WithKind(names.Kind), preserve: crd.Spec.PreserveUnknownFields}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped

	val, err := apihelpers.GetSchemaForVersion(crd, v.Name)
	if err != nil {
		return nil, err
	}
	var props *apiextensionsinternal.JSONSchemaProps
	if val != nil {
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return nil, fmt.Errorf("convert the schema: %w", err)
		}
		props = internal.OpenAPIV3Schema
		s, err := structuralschema.NewStructural(props)
		if err != nil && !ver.preserve {
			return nil, fmt.Errorf("structural schema: %w", err)
		}
		if s != nil {
			s = s.DeepCopy()
			if err := structuraldefaulting.PruneDefaults(s); err != nil {
				return nil, fmt.Errorf("prune defaults: %w", err)
			}
		}
		ver.structural = s
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("schema validator: %w", err)
	}

	statusSpec, statusValidator, scaleSpec, err := subresourceSpecs(crd, v.Name, props)
	if err != nil {
		return nil, err
	}
	st := registry.NewStrategy(crdserverscheme.NewUnstructuredObjectTyper(), namespaced, ver.kind, validator, statusValidator,
		ver.structural, statusSpec, scaleSpec, v.SelectableFields)
	ver.strategy = st
	ver.status = registry.NewStatusStrategy(st)

	r := &apiserver.Resource{
		GVR: gvr, Kind: names.Kind, Singular: names.Singular, Namespaced: namespaced,
		ShortNames: names.ShortNames, Categories: names.Categories, Verbs: verbs,
		New:          func() runtime.Object { return &unstructured.Unstructured{} },
		ValidateName: apiserver.ValidatePathSegmentName,
		Coerce:       ver.coerce,
		Defaults:     ver.defaults,
		Generation:   true,
		// kube's custom-resource strategy refuses unconditional updates.
		NeedsResourceVersion: true,
		GenerationChanged:    ver.generationChanged,
		Validate:             ver.validate,
		Warnings:             ver.warnings,
		Fields:               ver.fields,
		Table:                table(crd, v),
	}
	if statusSpec != nil || scaleSpec != nil {
		r.Subresources = map[string]apiserver.Subresource{}
	}
	if statusSpec != nil {
		r.Subresources["status"] = apiserver.StatusSubresource()
		r.ResetStatus = ver.resetStatus
		r.ValidateStatus = ver.validateStatus
	}
	if scaleSpec != nil {
		r.Subresources["scale"] = apiserver.ScaleSubresource()
		r.ScalePaths = &apiserver.ScalePaths{SpecReplicas: scaleSpec.SpecReplicasPath, StatusReplicas: scaleSpec.StatusReplicasPath}
		if scaleSpec.LabelSelectorPath != nil {
			r.ScalePaths.LabelSelector = *scaleSpec.LabelSelectorPath
		}
	}
	if v.Deprecated {
		r.Deprecation = deprecationWarning(crd, v)
	}
	if r.OpenAPIV3, err = builder.BuildOpenAPIV3(crd, v.Name, builder.Options{IncludeSelectableFields: true}); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if r.OpenAPIV2, err = builder.BuildOpenAPIV2(crd, v.Name, builder.Options{V2: true, IncludeSelectableFields: true}); err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	// As kube's OpenAPI controller: without defaults, like the typed
	// kinds' definitions.
	r.OpenAPIV2.Definitions = handler.PruneDefaults(r.OpenAPIV2.Definitions)
	return r, nil
}

// subresourceSpecs returns the status and scale subresources of the CRD's
// version, in apiextensions-apiserver's internal form, with the validator
// of the status schema; nil for a subresource the version has not.
func subresourceSpecs(crd *apiextensionsv1.CustomResourceDefinition, version string, props *apiextensionsinternal.JSONSchemaProps) (
	statusSpec *apiextensionsinternal.CustomResourceSubresourceStatus, statusValidator apiservervalidation.SchemaValidator,
	scaleSpec *apiextensionsinternal.CustomResourceSubresourceScale, err error) {
	subs, err := apihelpers.GetSubresourcesForVersion(crd, version)
	if err != nil {
		return nil, nil, nil, err
	}
	if subs != nil && subs.Status != nil {
		statusSpec = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		if props != nil && props.Properties != nil {
			if st, ok := props.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
					return nil, nil, nil, fmt.Errorf("status schema validator: %w", err)
				}
			}
		}
	}
	if subs != nil && subs.Scale != nil {
		scaleSpec = &apiextensionsinternal.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subs.Scale, scaleSpec, nil); err != nil {
			return nil, nil, nil, fmt.Errorf("convert the scale subresource: %w", err)
		}
	}
	return statusSpec, statusValidator, scaleSpec, nil
}

// deprecationWarning is the warning kube-apiserver gives on every request
// for a deprecated version.
func deprecationWarning(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) string {
	if v.DeprecationWarning != nil {
		return *v.DeprecationWarning
	}
	return fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
}

// coerce prunes a decoded body as kube's decoder does: the fields the
// schema does not know go, and their paths are returned for the
// fieldValidation directive; the metadata is made well-formed.
func (ver *version) coerce(obj runtime.Object) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("coerce %T: not unstructured", obj)
	}
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	objectMeta, hasMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, err
	}
	if !ver.preserve && ver.structural != nil {
		unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, ver.structural, true,
			structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, ver.structural)
	}
	if ver.structural != nil {
		opts := zeroOptions(schemaobjectmeta.CoerceWithOptions)
		opts.ReturnUnknownFieldPaths = true
		err, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, ver.structural, false, opts)
		if err != nil {
			return nil, err
		}
		unknown = append(unknown, paths...)
	}
	if kind != "" {
		u.SetKind(kind)
	}
	if apiVersion != "" {
		u.SetAPIVersion(apiVersion)
	}
	if hasMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// defaults fills the schema's defaults.
func (ver *version) defaults(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok && ver.structural != nil {
		structuraldefaulting.Default(u.Object, ver.structural)
	}
}

// resetStatus is kube's strategy on the status of a kind with the status
// subresource: a create has none, an update keeps old's (old nil: a
// create).
func (ver *version) resetStatus(obj, old runtime.Object) {
	if old == nil {
		ver.strategy.PrepareForCreate(context.Background(), obj)
		return
	}
	ver.strategy.PrepareForUpdate(context.Background(), obj, old)
}

// generationChanged reports whether kube's strategy moves the generation
// on this update: anything but metadata changed.
func (ver *version) generationChanged(obj, old runtime.Object) bool {
	probe := obj.(*unstructured.Unstructured).DeepCopy()
	oldGen := old.(*unstructured.Unstructured).GetGeneration()
	probe.SetGeneration(oldGen)
	ver.strategy.PrepareForUpdate(context.Background(), probe, old)
	return probe.GetGeneration() != oldGen
}

func (ver *version) validate(obj, old runtime.Object) field.ErrorList {
	if old == nil {
		return ver.strategy.Validate(context.Background(), obj)
	}
	return ver.strategy.ValidateUpdate(context.Background(), obj, old)
}

func (ver *version) validateStatus(obj, old runtime.Object) field.ErrorList {
	return ver.status.ValidateUpdate(context.Background(), obj, old)
}

func (ver *version) warnings(obj, old runtime.Object) []string {
	if old == nil {
		return ver.strategy.WarningsOnCreate(context.Background(), obj)
	}
	return ver.strategy.WarningsOnUpdate(context.Background(), obj, old)
}

// fields adds the version's selectable fields.
func (ver *version) fields(obj runtime.Object, set fields.Set) {
	_, fs, err := ver.strategy.GetAttrs(obj)
	if err != nil {
		return
	}
	for k, v := range fs {
		set[k] = v
	}
}

// table is the Table of v's additional printer columns (an Age column
// when it has none), or nil, kube's default, when kube's convertor
// refuses them.
func table(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) *apiserver.TableDef {
	cols := v.AdditionalPrinterColumns
	if len(cols) == 0 {
		cols = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date",
			Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"}}
	}
	conv, err := tableconvertor.New(cols)
	if err != nil {
		return nil
	}
	head, err := conv.ConvertToTable(context.Background(), &unstructured.UnstructuredList{}, nil)
	if err != nil {
		return nil
	}
	return &apiserver.TableDef{Columns: head.ColumnDefinitions,
		Cells: func(obj runtime.Object, _ time.Time) []any {
			t, err := conv.ConvertToTable(context.Background(), obj, &metav1.TableOptions{NoHeaders: true})
			if err != nil || len(t.Rows) != 1 {
				return make([]any, len(head.ColumnDefinitions))
			}
			return t.Rows[0].Cells
		}}
}

// zeroOptions returns the zero value of the options a metadata coercion
// function takes, its type inferred from the function.
func zeroOptions[O any](func(*field.Path, any, *structuralschema.Structural, bool, O) (*field.Error, []string)) (o O) {
	return o
}
