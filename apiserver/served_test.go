package apiserver_test

import (
	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry"
)

// The package's tests hold the whole server to kube-apiserver's answers
// (discovery, OpenAPI, tables), so their servers serve the groups of
// apiserver/registry too, as kubegate apiserver does.
func init() { apiserver.SetServedResources(registry.Resources) }
