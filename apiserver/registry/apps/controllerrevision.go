package apps

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// ControllerRevisions (apps/v1), the snapshots of a template that the
// DaemonSet and StatefulSet controllers keep (D.5): no defaults, no
// generation, no status. The data must be a JSON object on create and
// never changes afterwards; the revision is not negative.

func controllerRevisionResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), Kind: "ControllerRevision",
		Singular: "controllerrevision", Namespaced: true, ValidateName: apivalidation.NameIsDNSSubdomain,
		Validate: validateControllerRevision, Table: controllerRevisionTable}
}

// validateControllerRevision is kube's ValidateControllerRevisionCreate
// (old nil) and ValidateControllerRevisionUpdate: the revision, then on
// create the data's shape and on update its immutability.
func validateControllerRevision(obj, old runtime.Object) field.ErrorList {
	cr := obj.(*appsv1.ControllerRevision)
	errs := apiserver.NonNegative(cr.Revision, field.NewPath("revision"))
	path := field.NewPath("data")
	if old != nil {
		return append(errs, apivalidation.ValidateImmutableField(cr.Data, old.(*appsv1.ControllerRevision).Data, path)...)
	}
	var v any
	switch {
	case cr.Data.Raw == nil:
		errs = append(errs, field.Required(path, "data is mandatory"))
	case json.Unmarshal(cr.Data.Raw, &v) != nil:
		err := json.Unmarshal(cr.Data.Raw, &v)
		errs = append(errs, field.Invalid(path, "<value omitted>", fmt.Sprintf("error parsing data: %v", err)))
	case v == nil:
		errs = append(errs, field.Required(path, "data is mandatory"))
	default:
		if _, ok := v.(map[string]any); !ok {
			errs = append(errs, field.Required(path, "data must be a valid JSON object"))
		}
	}
	return errs
}

// controllerRevisionTable has kube's columns: the controller as
// kind.group/name, and the revision.
var controllerRevisionTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Controller", Type: "string", Description: "Controller of the object"},
		{Name: "Revision", Type: "string", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
		apiserver.AgeColumn,
	},
	Cells: func(obj runtime.Object, now time.Time) []any {
		cr := obj.(*appsv1.ControllerRevision)
		controller := "<none>"
		if ref := metav1.GetControllerOfNoCopy(cr); ref != nil {
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
				controller = ref.Name
				if gk := gv.WithKind(ref.Kind).GroupKind(); !gk.Empty() {
					controller = strings.ToLower(gk.String()) + "/" + ref.Name
				}
			}
		}
		return []any{cr.Name, controller, cr.Revision, apiserver.Age(cr.CreationTimestamp, now)}
	},
}
