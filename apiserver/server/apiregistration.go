package server

import (
	"context"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	crdinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	"k8s.io/apimachinery/pkg/runtime/schema"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	aggregatorclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/apiregistration"
)

// autoregisterWorkers is how many APIServices are written at once.
const autoregisterWorkers = 2

// StartAPIServiceRegistration keeps the local APIServices, as
// kube-apiserver's autoregister and crd-autoregister controllers do
// (I.3), with kube-aggregator's autoregister controller as a client of
// cfg until ctx ends: one for each group version of typed kinds the
// server serves, written once at start, and one for each served version
// of a custom resource definition, kept while it is served. stop returns
// once it has stopped.
func StartAPIServiceRegistration(ctx context.Context, cfg *restclient.Config, srv *apiserver.Server) (stop func(), _ error) {
	client, err := aggregatorclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	crdClient, err := crdclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := aggregatorinformers.NewSharedInformerFactory(client, 0)
	crdFactory := crdinformers.NewSharedInformerFactory(crdClient, 0)
	ctrl := autoregister.NewAutoRegisterController(factory.Apiregistration().V1().APIServices(), client.ApiregistrationV1())
	for _, gv := range srv.TypedGroupVersions() {
		gp, ok := apiserver.GroupPriority(gv.Group)
		if gv.Group == apiregistration.APIServicesGVR.Group || !ok {
			continue
		}
		if svc, ok := apiregistration.Local(gv, gp); ok {
			ctrl.AddAPIServiceToSyncOnStart(svc)
		}
	}
	crds := crdFactory.Apiextensions().V1().CustomResourceDefinitions()
	served := &customVersions{ctrl: ctrl, lister: crds.Informer().GetStore()}
	if _, err := crds.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    served.changed,
		UpdateFunc: func(old, obj any) { served.changed(old); served.changed(obj) },
		DeleteFunc: served.changed,
	}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	crdFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ctrl.Run(autoregisterWorkers, ctx.Done()) }()
	return func() {
		cancel()
		factory.Shutdown()
		crdFactory.Shutdown()
		wg.Wait()
	}, nil
}

// customVersions registers the APIServices of the definitions' served
// versions with the autoregister controller.
type customVersions struct {
	mu     sync.Mutex
	ctrl   autoregister.AutoAPIServiceRegistration
	lister cache.Store
}

// changed brings the APIServices of the group versions of a definition
// that was added, changed or deleted up to date: one is kept while some
// definition serves its group version.
func (c *customVersions) changed(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
		if c.served(gv) {
			c.ctrl.AddAPIServiceToSync(apiregistration.LocalCustom(gv))
		} else {
			c.ctrl.RemoveAPIServiceToSync(gv.Version + "." + gv.Group)
		}
	}
}

// served reports whether a stored definition serves gv.
func (c *customVersions) served(gv schema.GroupVersion) bool {
	for _, obj := range c.lister.List() {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || crd.Spec.Group != gv.Group {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == gv.Version && v.Served {
				return true
			}
		}
	}
	return false
}
