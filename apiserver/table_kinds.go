package apiserver

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The tables of kube's printers for the kinds kubegate serves besides pods
// (B.5). Descriptions are the API documentation of the fields shown, as
// kube's are; integer columns hold numbers, not strings.

var (
	ContainersColumn = metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	ImagesColumn     = metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
)

// ContainerCells lists the names and the images of containers, each joined
// with commas.
func ContainerCells(containers []corev1.Container) (names, images string) {
	var n, i []string
	for _, c := range containers {
		n = append(n, c.Name)
		i = append(i, c.Image)
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// replicasColumns are the columns of replication controllers and replica
// sets, given the documentation of their spec and status.
func replicasColumns(specDoc, statusDoc map[string]string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{NameColumn,
		{Name: "Desired", Type: "integer", Description: specDoc["replicas"]},
		{Name: "Current", Type: "integer", Description: statusDoc["replicas"]},
		{Name: "Ready", Type: "integer", Description: statusDoc["readyReplicas"]},
		AgeColumn, ContainersColumn, ImagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: specDoc["selector"]},
	}
}

// replicas is a desired replica count, 0 when unset.
func replicas(p *int32) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

var replicaSetTable = &TableDef{
	Columns: replicasColumns(appsv1.ReplicaSetSpec{}.SwaggerDoc(), appsv1.ReplicaSetStatus{}.SwaggerDoc()),
	Cells: func(obj runtime.Object, now time.Time) []any {
		rs := obj.(*appsv1.ReplicaSet)
		names, images := ContainerCells(rs.Spec.Template.Spec.Containers)
		return []any{rs.Name, replicas(rs.Spec.Replicas), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			Age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}
	},
}

var statefulSetTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{NameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		AgeColumn, ContainersColumn, ImagesColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		ss := obj.(*appsv1.StatefulSet)
		names, images := ContainerCells(ss.Spec.Template.Spec.Containers)
		return []any{ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, replicas(ss.Spec.Replicas)),
			Age(ss.CreationTimestamp, now), names, images}
	},
}
