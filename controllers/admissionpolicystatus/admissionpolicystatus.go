// Package admissionpolicystatus is kube-controller-manager's
// validatingadmissionpolicy-status-controller (docs/kubernetes-behaviour.md
// D.12): it type-checks the CEL expressions of every
// ValidatingAdmissionPolicy against the OpenAPI schemas of the kinds the
// policy matches and of its parameter kind, and writes what it finds to
// status.typeChecking, with the generation it checked as
// status.observedGeneration. A policy whose observed generation is
// current is left alone.
//
// The type checker is k8s.io/apiserver's, the one kube's controller
// drives. The controller around it is kubegate's: kube's lives in
// k8s.io/kubernetes, which kubegate does not import. Like kube's, it
// writes the status with a forced server-side apply under its own field
// manager, FieldManager. kube's checker reads built-in schemas from definitions compiled
// into kube-controller-manager and the others from the API server's
// /openapi/v3; kubegate's reads all of them from /openapi/v3, which serves
// kube's definitions.
//
// The identity it runs as needs: validatingadmissionpolicies list and
// watch, validatingadmissionpolicies/status patch, and discovery and
// /openapi/v3 (kube's system:controller:validatingadmissionpolicy-status-controller
// role with the discovery every identity has).
package admissionpolicystatus

import (
	"context"
	"log/slog"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	admissionregistrationapply "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	admissionregistrationlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
)

// Name is the controller's name in kube-controller-manager's --controllers
// flag, and its service account.
const Name = "validatingadmissionpolicy-status-controller"

// FieldManager is the field manager of the status the controller writes,
// kube's.
const FieldManager = "validatingadmissionpolicy-status"

// DefaultWorkers is how many policies are checked at once, kube's
// default --concurrent-validating-admission-policy-status-syncs.
const DefaultWorkers = 5

// Descriptor runs the controller in the controller manager.
var Descriptor = controllers.Descriptor{Name: Name, ServiceAccount: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
	return New(c.Client, c.Informers, c.Logger), nil
}}

// Controller writes the type checking status of policies.
type Controller struct {
	client   kubernetes.Interface
	policies admissionregistrationlisters.ValidatingAdmissionPolicyLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	checker  *validating.TypeChecker
	log      *slog.Logger
}

// New builds the controller on factory's informers. Kinds are mapped and
// their schemas read through client's discovery; the mapping is read
// again when a kind is not found in it, so a policy on a custom resource
// defined later is checked against its schema.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, log *slog.Logger) *Controller {
	inf := factory.Admissionregistration().V1().ValidatingAdmissionPolicies()
	disc := memory.NewMemCacheClient(client.Discovery())
	c := &Controller{client: client, policies: inf.Lister(), synced: inf.Informer().HasSynced,
		queue: controllers.NewQueue(Name), log: log,
		checker: &validating.TypeChecker{
			SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: client.Discovery()},
			RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(disc),
		}}
	enqueue := func(obj any) {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			c.queue.Add(p.Name)
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }})
	return c
}

// Run checks policies until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, Name, c.queue, DefaultWorkers, c.log, c.sync, c.synced)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	p, err := c.policies.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.Generation <= p.Status.ObservedGeneration {
		return nil
	}
	found := c.checker.Check(p)
	warnings := make([]*admissionregistrationapply.ExpressionWarningApplyConfiguration, 0, len(found))
	for _, w := range found {
		warnings = append(warnings, admissionregistrationapply.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	status := admissionregistrationapply.ValidatingAdmissionPolicy(p.Name).WithStatus(
		admissionregistrationapply.ValidatingAdmissionPolicyStatus().
			WithObservedGeneration(p.Generation).
			WithTypeChecking(admissionregistrationapply.TypeChecking().WithExpressionWarnings(warnings...)))
	_, err = c.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, status,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}
