// Package core is the core API group, v1: its kinds, stored with
// kube-apiserver's defaults, validation, status handling and tables, and
// the subresources that give them their behaviour.
package core

import "github.com/kubegate/kubegate/apiserver"

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	rs := append(workloadResources(), clusterResources()...)
	rs = append(rs, volumeResources()...)
	return append(rs, podTemplateResource(), resourceQuotaResource(), componentStatusResource())
}
