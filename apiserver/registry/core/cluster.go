package core

import "github.com/kubegate/kubegate/apiserver"

func clusterResources() []*apiserver.Resource { return nil }
