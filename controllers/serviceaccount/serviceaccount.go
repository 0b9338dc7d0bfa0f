// Package serviceaccount is kube-controller-manager's serviceaccount
// controller (docs/kubernetes-behaviour.md G.11): every active namespace
// has a ServiceAccount named "default", made when the namespace appears
// and made again when it is deleted. A namespace being deleted gets none.
//
// The identity it runs as needs: namespaces and serviceaccounts list and
// watch; serviceaccounts create.
package serviceaccount

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
)

// Descriptor runs the controller in the controller manager, as kube's
// "serviceaccount" controller.
var Descriptor = controllers.Descriptor{Name: "serviceaccount", ServiceAccount: "service-account-controller", New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c.Client, c.Informers, c.Logger), nil
}}

// DefaultName is the service account every namespace gets.
const DefaultName = "default"

// DefaultWorkers is how many namespaces are synced at once: one, as kube
// runs this controller.
const DefaultWorkers = 1

// Controller is the serviceaccount controller.
type Controller struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	log        *slog.Logger
}

// New builds the controller on factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	nsInf := factory.Core().V1().Namespaces()
	saInf := factory.Core().V1().ServiceAccounts()
	c := &Controller{client: client, namespaces: nsInf.Lister(), accounts: saInf.Lister(),
		synced: []cache.InformerSynced{nsInf.Informer().HasSynced, saInf.Informer().HasSynced},
		queue:  controllers.NewQueue("serviceaccount"), log: log}
	enqueueNS := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			c.queue.Add(ns.Name)
		}
	}
	_, _ = nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueNS, UpdateFunc: func(_, cur any) { enqueueNS(cur) }})
	_, _ = saInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		obj = controllers.Unwrap(obj)
		if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.Name == DefaultName {
			c.queue.Add(sa.Namespace)
		}
	}})
	return c
}

// Run syncs namespaces until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, "serviceaccount", c.queue, DefaultWorkers, c.log, c.sync, c.synced...)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		return nil // none in a namespace being deleted
	}
	if _, err := c.accounts.ServiceAccounts(name).Get(DefaultName); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName}}
	_, err = c.client.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	}
	return err
}
