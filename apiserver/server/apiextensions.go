package server

import (
	"context"
	"errors"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	"k8s.io/apiextensions-apiserver/pkg/controller/apiapproval"
	"k8s.io/apiextensions-apiserver/pkg/controller/establish"
	"k8s.io/apiextensions-apiserver/pkg/controller/finalizer"
	"k8s.io/apiextensions-apiserver/pkg/controller/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/dynamic"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubegate/kubegate/apiserver/customresource"
)

// crdResync is how often the CRD informer replays its objects, as in
// kube-apiserver's apiextensions server.
const crdResync = 5 * time.Minute

// crdFinalizerWorkers is how many CRDs the finalizer empties at once,
// and approvalWorkers how many CRDs the approval controller checks at
// once, as in kube-apiserver.
const (
	crdFinalizerWorkers = 5
	approvalWorkers     = 5
)

// StartAPIExtensionsControllers runs kube-apiserver's controllers of
// CustomResourceDefinitions, from k8s.io/apiextensions-apiserver, as
// clients of cfg until ctx ends (I.1): the naming controller
// (NamesAccepted, the accepted names unique in their group), the
// establishing controller (Established), the approval controller
// (KubernetesAPIApprovalPolicyConformant, for a CRD of a group Kubernetes
// protects, from its api-approved.kubernetes.io annotation) and the CRD
// finalizer, which deletes the custom resources of a deleted CRD, through
// the dynamic client, and then its cleanup finalizer. The API server
// runs them on its loopback client; stop, which returns once they have
// stopped, ends them before the server stops serving.
//
// ownerOf says which owner serves a resource (apiserver.Server's
// OwnerOf): the finalizer deletes only what the deleted CRD's own
// custom resources serve, never a built-in resource that shares its group
// and name.
func StartAPIExtensionsControllers(ctx context.Context, cfg *restclient.Config, ownerOf func(schema.GroupVersionResource) (string, bool)) (stop func(), _ error) {
	crdClient, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := externalversions.NewSharedInformerFactory(crdClient, crdResync)
	crds := factory.Apiextensions().V1().CustomResourceDefinitions()
	naming := status.NewNamingConditionController(klog.FromContext(ctx), crds, crdClient.ApiextensionsV1())
	establishing := establish.NewEstablishingController(crds, crdClient.ApiextensionsV1())
	approval := apiapproval.NewKubernetesAPIApprovalPolicyConformantConditionController(crds, crdClient.ApiextensionsV1())
	cleanup := finalizer.NewCRDFinalizer(crds, crdClient.ApiextensionsV1(), crClients{dyn: dyn, ownerOf: ownerOf})
	// kube-apiserver queues a CRD for establishing once its custom
	// resource handler has seen its names accepted, and serves it from
	// then on; kubegate serves custom resources from the stored CRDs, so
	// Established follows NamesAccepted at once.
	queue := func(obj any) {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if ok && conditionTrue(crd, apiextensionsv1.NamesAccepted) && !conditionTrue(crd, apiextensionsv1.Established) {
			establishing.QueueCRD(crd.Name, 0)
		}
	}
	if _, err := crds.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: queue, UpdateFunc: func(_, obj any) { queue(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){
		naming.RunWithContext,
		establishing.RunWithContext,
		func(ctx context.Context) { approval.RunWithContext(approvalWorkers, ctx) },
		func(ctx context.Context) { cleanup.RunWithContext(crdFinalizerWorkers, ctx) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	factory.Start(ctx.Done())
	return func() {
		cancel()
		factory.Shutdown()
		wg.Wait()
	}, nil
}

func conditionTrue(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// crClients gives the CRD finalizer the custom resources of a CRD through
// the dynamic client, where kube-apiserver gives it their storage. The
// loopback client may delete anything, so a CRD whose resource the server
// does not serve as that CRD's custom resources (one named for a built-in
// resource, or not installed) has none: the finalizer must never be
// steered at objects its CRD does not own.
type crClients struct {
	dyn     dynamic.Interface
	ownerOf func(schema.GroupVersionResource) (string, bool)
}

func (c crClients) GetCustomResourceListerCollectionDeleter(crd *apiextensionsv1.CustomResourceDefinition) (finalizer.ListerCollectionDeleter, error) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return nil, errors.New("no version is served")
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Status.AcceptedNames.Plural}
	if owner, ok := c.ownerOf(gvr); !ok || owner != customresource.Owner(crd) {
		return noCustomResources{}, nil
	}
	return &crClient{res: c.dyn.Resource(gvr), namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped}, nil
}

// noCustomResources is the custom resources of a CRD the server does not
// serve: none, and nothing to delete.
type noCustomResources struct{}

func (noCustomResources) NewList() runtime.Object { return &unstructured.UnstructuredList{} }

func (noCustomResources) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	return &unstructured.UnstructuredList{}, nil
}

func (noCustomResources) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errors.New("custom resources are not printed here")
}

func (noCustomResources) DeleteCollection(context.Context, rest.ValidateObjectFunc, *metav1.DeleteOptions, *metainternalversion.ListOptions) (runtime.Object, error) {
	return &unstructured.UnstructuredList{}, nil
}

// crClient lists and deletes the custom resources of one CRD. A resource
// the server does not serve has none: a 404 is an empty list.
type crClient struct {
	res        dynamic.NamespaceableResourceInterface
	namespaced bool
}

var _ finalizer.ListerCollectionDeleter = (*crClient)(nil)

func (c *crClient) NewList() runtime.Object { return &unstructured.UnstructuredList{} }

func (c *crClient) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	list, err := c.res.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return &unstructured.UnstructuredList{}, nil
	}
	return list, err
}

func (c *crClient) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errors.New("custom resources are not printed here")
}

// DeleteCollection deletes the custom resources of the context's
// namespace (all of them for a cluster-scoped CRD).
func (c *crClient) DeleteCollection(ctx context.Context, _ rest.ValidateObjectFunc, opts *metav1.DeleteOptions, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	var ri dynamic.ResourceInterface = c.res
	if ns, _ := request.NamespaceFrom(ctx); c.namespaced {
		ri = c.res.Namespace(ns)
	}
	var o metav1.DeleteOptions
	if opts != nil {
		o = *opts
	}
	if err := ri.DeleteCollection(ctx, o, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	return &unstructured.UnstructuredList{}, nil
}
