// Package apiextensions is the apiextensions.k8s.io API group:
// CustomResourceDefinitions (apiextensions.k8s.io/v1), with
// kube-apiserver's defaults, strategy, validation, warnings and columns,
// all taken from k8s.io/apiextensions-apiserver (I.1). Its code works on the
// group's internal type, so each hook converts the served v1 object to it
// and back with the group's own conversions. The conditions a CRD gets
// (NamesAccepted, Established) and the cleanup of a deleted one are the
// work of kube's controllers, which apiserver/server runs beside the API.
package apiextensions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition/tableconvertor"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn"
)

// CustomResourceDefinitionsGVR is the resource this package serves.
var CustomResourceDefinitionsGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// scheme holds the group's internal and versioned types with their
// conversions and defaults; kube's strategy reads types from it.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

var (
	strategy       = customresourcedefinition.NewStrategy(scheme)
	statusStrategy = customresourcedefinition.NewStatusStrategy(scheme)
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{GVR: CustomResourceDefinitionsGVR, Kind: "CustomResourceDefinition", Singular: "customresourcedefinition",
		ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"}, ValidateName: anyName,
		// kube-apiserver stores CRDs in their v1beta1 form.
		StoredAs:     apiextensionsv1beta1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()},
		Generation:   true, Defaults: defaultCRD, PrepareCreate: prepareCreate, Prepare: prepareUpdate,
		Validate: validateCRD, ValidateStatus: validateStatus, Warnings: warnings, ResetStatus: resetStatus,
		StatusTakesMetadata: true, BeginDelete: beginDelete, DeletePreconditions: deletePreconditions, Table: crdTable,
		TypeConverter: applyconfiguration.NewTypeConverter(scheme), CheckDecoded: checkConverts}}
}

// checkConverts refuses a CRD that does not convert to the internal type,
// as kube-apiserver's decoding does: one whose JSON fields (a default, an
// example, an enum value) hold what is not JSON, which only a protobuf
// body can carry (I.1).
func checkConverts(obj runtime.Object) error {
	return scheme.Convert(obj, &apiextensions.CustomResourceDefinition{}, nil)
}

// anyName leaves the name to kube's validation, which wants it
// DNS-subdomain shaped and equal to spec.names.plural+"."+spec.group.
func anyName(string, bool) []string { return nil }

// toInternal converts a served CRD to the internal type kube's code takes.
func toInternal(obj runtime.Object) *apiextensions.CustomResourceDefinition {
	out := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(obj.(*apiextensionsv1.CustomResourceDefinition), out, nil); err != nil {
		panic(err) // the body's decoding refused what does not convert (checkConverts)
	}
	return out
}

// fromInternal writes in back into obj, a served CRD.
func fromInternal(in *apiextensions.CustomResourceDefinition, obj runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	tm := crd.TypeMeta
	*crd = apiextensionsv1.CustomResourceDefinition{}
	if err := scheme.Convert(in, crd, nil); err != nil {
		panic(err)
	}
	crd.TypeMeta = tm
}

// defaultCRD fills kube's defaults: the scope, a listKind, the
// conversion strategy, ... (SetObjectDefaults_CustomResourceDefinition).
func defaultCRD(obj runtime.Object) {
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(obj.(*apiextensionsv1.CustomResourceDefinition))
}

// prepareCreate is kube's PrepareForCreate: no status but the storage
// version in status.storedVersions, and generation 1.
func prepareCreate(obj runtime.Object, _ authn.User) {
	crd := toInternal(obj)
	strategy.PrepareForCreate(context.Background(), crd)
	fromInternal(crd, obj)
}

// prepareUpdate is kube's PrepareForUpdate on an update of the object:
// the stored status, with the storage version added to storedVersions
// when new, and a generation that counts a changed spec. Create runs
// PrepareCreate, which does it all, and updates of the status do not run
// it (StatusTakesMetadata).
func prepareUpdate(obj, old runtime.Object) {
	if old == nil {
		return
	}
	crd := toInternal(obj)
	strategy.PrepareForUpdate(context.Background(), crd, toInternal(old))
	fromInternal(crd, obj)
}

// resetStatus keeps the stored status on a write of the object (none on
// create), and takes the body's on a write of the status (from).
func resetStatus(obj, from runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	if from != nil {
		crd.Status = *from.(*apiextensionsv1.CustomResourceDefinition).Status.DeepCopy()
	}
}

// validateCRD is kube's validation of a create or an update of the
// object. The metadata other than the name is checked by the API server
// as for every kind, so kube's errors about it are left out here.
func validateCRD(obj, old runtime.Object) field.ErrorList {
	crd := toInternal(obj)
	if old == nil {
		return withoutMetadata(strategy.Validate(context.Background(), crd), true)
	}
	return withoutMetadata(strategy.ValidateUpdate(context.Background(), crd, toInternal(old)), false)
}

// validateStatus is kube's validation of an update of the status.
func validateStatus(obj, old runtime.Object) field.ErrorList {
	return withoutMetadata(statusStrategy.ValidateUpdate(context.Background(), toInternal(obj), toInternal(old)), false)
}

// withoutMetadata drops the errors about metadata the API server's own
// check reports, keeping those of kube's name rule on a create.
func withoutMetadata(errs field.ErrorList, keepName bool) field.ErrorList {
	var out field.ErrorList
	for _, err := range errs {
		switch {
		case keepName && err.Type == field.ErrorTypeInvalid && (err.Field == "metadata.name" || err.Field == "metadata.generateName"):
		case err.Field == "metadata" || strings.HasPrefix(err.Field, "metadata."):
			continue
		}
		out = append(out, err)
	}
	return out
}

// warnings are kube's warnings on a create (old nil) or an update of the
// object: formats it does not know, sets of objects or lists.
func warnings(obj, old runtime.Object) []string {
	if old == nil {
		return strategy.WarningsOnCreate(context.Background(), toInternal(obj))
	}
	return strategy.WarningsOnUpdate(context.Background(), toInternal(obj), toInternal(old))
}

// beginDelete is kube's first delete of a CRD: it is marked deleted, with
// the cleanup finalizer, which the CRD finalizer removes once the custom
// resources are gone, and a Terminating condition.
func beginDelete(obj runtime.Object, now time.Time) {
	crd := toInternal(obj)
	ts := metav1.NewTime(now.Truncate(time.Second))
	crd.DeletionTimestamp = &ts
	if !apiextensions.CRDHasFinalizer(crd, apiextensions.CustomResourceCleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, apiextensions.CustomResourceCleanupFinalizer)
	}
	apiextensions.SetCRDCondition(crd, apiextensions.CustomResourceDefinitionCondition{
		Type:    apiextensions.Terminating,
		Status:  apiextensions.ConditionTrue,
		Reason:  "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	})
	fromInternal(crd, obj)
}

// deletePreconditions checks a delete's preconditions as kube's CRD
// storage does, with its conflicts, which name the resource.
func deletePreconditions(p *metav1.Preconditions, obj runtime.Object) error {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	gr := apiextensionsv1.Resource("customresourcedefinitions")
	if p.UID != nil && *p.UID != crd.UID {
		return apierrors.NewConflict(gr, crd.Name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, crd.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != crd.ResourceVersion {
		return apierrors.NewConflict(gr, crd.Name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, crd.ResourceVersion))
	}
	return nil
}

// crdTable is kube's table of CRDs, its columns and cells from
// apiextensions-apiserver's own table convertor.
var crdTable = func() *apiserver.TableDef {
	conv := tableconvertor.New()
	head, err := conv.ConvertToTable(context.Background(), &apiextensions.CustomResourceDefinition{}, nil)
	if err != nil {
		panic(err)
	}
	return &apiserver.TableDef{Columns: head.ColumnDefinitions, Cells: func(obj runtime.Object, _ time.Time) []any {
		t, err := conv.ConvertToTable(context.Background(), toInternal(obj), &metav1.TableOptions{NoHeaders: true})
		if err != nil || len(t.Rows) != 1 {
			return nil
		}
		return t.Rows[0].Cells
	}}
}()
