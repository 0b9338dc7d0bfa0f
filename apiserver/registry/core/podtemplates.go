package core

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// podTemplateResource is the PodTemplate kind (D.14): a namespaced pod
// template with the defaults and validation of any workload's template, a
// generation that counts the changes of .template, and kube's Table.
func podTemplateResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("podtemplates"), Kind: "PodTemplate", Singular: "podtemplate",
		Namespaced: true, ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, GenerationChanged: podTemplateChanged,
		Defaults: defaultPodTemplate, Validate: validatePodTemplateKind, Warnings: podTemplateWarnings, Table: podTemplateTable}
}

func defaultPodTemplate(obj runtime.Object) {
	DefaultPodSpec(&obj.(*corev1.PodTemplate).Template.Spec)
}

func podTemplateChanged(obj, old runtime.Object) bool {
	return !apiequality.Semantic.DeepEqual(obj.(*corev1.PodTemplate).Template, old.(*corev1.PodTemplate).Template)
}

// validatePodTemplateKind checks .template as kube checks any pod
// template; on an update the template may change as a whole.
func validatePodTemplateKind(obj, _ runtime.Object) field.ErrorList {
	return ValidatePodTemplate(&obj.(*corev1.PodTemplate).Template, field.NewPath("template"))
}

// podTemplateWarnings are kube's warnings about .template, on a create
// and on an update that changes it.
func podTemplateWarnings(obj, old runtime.Object) []string {
	t := obj.(*corev1.PodTemplate)
	if old != nil && !podTemplateChanged(obj, old) {
		return nil
	}
	if g := t.Template.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		return []string{field.NewPath("template", "spec", "terminationGracePeriodSeconds").String() +
			": must be >= 0; negative values are invalid and will be treated as 1"}
	}
	return nil
}

var podTemplateTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{
		apiserver.NameColumn,
		{Name: "Containers", Type: "string", Description: ContainersColumn.Description},
		{Name: "Images", Type: "string", Description: ImagesColumn.Description},
		{Name: "Pod Labels", Type: "string", Description: "The labels for the pod template."},
	},
	Cells: func(obj runtime.Object, _ time.Time) []any {
		t := obj.(*corev1.PodTemplate)
		names, images := ContainerCells(t.Template.Spec.Containers)
		return []any{t.Name, names, images, labels.FormatLabels(t.Template.Labels)}
	},
}
