// Package apps is the apps API group: Deployments, ReplicaSets,
// StatefulSets, DaemonSets and ControllerRevisions, stored with
// kube-apiserver's defaults and validation (D.5). The replicated kinds
// serve apiserver's scale subresource (G.2); their checks of the pod
// template, the status counts and the replica columns are apiserver's,
// shared with ReplicationControllers.
package apps

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{replicaSetResource(), statefulSetResource(), deploymentResource(), daemonSetResource(), controllerRevisionResource()}
}

// statusAndScale are the subresources of a replicated kind.
func statusAndScale() map[string]apiserver.Subresource {
	return map[string]apiserver.Subresource{"status": apiserver.StatusSubresource(), "scale": apiserver.ScaleSubresource()}
}

// appsSelector checks the label selector of an apps kind: required, valid
// (label values included), not empty. kindWord is the word kube's message
// uses: "deployment" for a ReplicaSet (sic), "statefulset".
func appsSelector(sel *metav1.LabelSelector, kindWord string, path *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path, sel, "empty selector is invalid for "+kindWord))
	}
	return errs
}

// collisionNotLowered checks that a workload's collision count only grows.
func collisionNotLowered(path *field.Path, now, was *int32) field.ErrorList {
	if was != nil && (now == nil || *now < *was) {
		return field.ErrorList{field.Invalid(path.Child("collisionCount"), ptr.Deref(now, 0), "cannot be decremented")}
	}
	return nil
}
