// Package registry lists the resources of the API groups defined in
// apiserver/registry/<group>, which an API server serves by passing them
// as apiserver.Config.Resources. Package apiserver never imports them
// and defines no kind of its own. The
// authentication and authorization groups are not listed: their reviews
// need the server's authenticators and authorizer, and their packages'
// Creators give them as apiserver.Config.Creators.
package registry

import (
	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/admissionregistration"
	"github.com/kubegate/kubegate/apiserver/registry/apiextensions"
	"github.com/kubegate/kubegate/apiserver/registry/apiregistration"
	"github.com/kubegate/kubegate/apiserver/registry/apps"
	"github.com/kubegate/kubegate/apiserver/registry/autoscaling"
	"github.com/kubegate/kubegate/apiserver/registry/batch"
	"github.com/kubegate/kubegate/apiserver/registry/certificates"
	"github.com/kubegate/kubegate/apiserver/registry/coordination"
	"github.com/kubegate/kubegate/apiserver/registry/core"
	"github.com/kubegate/kubegate/apiserver/registry/discovery"
	"github.com/kubegate/kubegate/apiserver/registry/events"
	"github.com/kubegate/kubegate/apiserver/registry/flowcontrol"
	"github.com/kubegate/kubegate/apiserver/registry/networking"
	"github.com/kubegate/kubegate/apiserver/registry/node"
	"github.com/kubegate/kubegate/apiserver/registry/policy"
	"github.com/kubegate/kubegate/apiserver/registry/rbac"
	"github.com/kubegate/kubegate/apiserver/registry/resource"
	"github.com/kubegate/kubegate/apiserver/registry/scheduling"
	"github.com/kubegate/kubegate/apiserver/registry/storage"
	"github.com/kubegate/kubegate/apiserver/registry/storagemigration"
)

// Resources returns the resources of every group here, each a new value:
// a server keeps and completes the values it is given.
func Resources() []*apiserver.Resource {
	var rs []*apiserver.Resource
	for _, group := range []func() []*apiserver.Resource{
		certificates.Resources,
		scheduling.Resources,
		coordination.Resources,
		discovery.Resources,
		rbac.Resources,
		batch.Resources,
		policy.Resources,
		core.Resources,
		apps.Resources,
		events.Resources,
		admissionregistration.Resources,
		apiextensions.Resources,
		autoscaling.Resources,
		node.Resources,
		storage.Resources,
		resource.Resources,
		networking.Resources,
		flowcontrol.Resources,
		storagemigration.Resources,
		apiregistration.Resources,
	} {
		rs = append(rs, group()...)
	}
	return rs
}
