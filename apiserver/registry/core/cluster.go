package core

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// clusterResources are the group's kinds a cluster is made of besides its
// workloads: namespaces, nodes, service accounts, secrets, config maps,
// events, services and endpoints.
func clusterResources() []*apiserver.Resource {
	return []*apiserver.Resource{namespaceResource(), nodeResource(), serviceAccountResource(), secretResource(), configMapResource(),
		coreEventResource(), serviceResource(), endpointsResource()}
}

// qualifiedName checks a name with an optional DNS subdomain prefix, as
// label keys are.
func qualifiedName(path *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}
