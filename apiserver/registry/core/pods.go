package core

import "github.com/kubegate/kubegate/apiserver"

func workloadResources() []*apiserver.Resource { return nil }
