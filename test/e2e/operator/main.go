// Command operator is a small operator written with controller-runtime, as
// platform engineers write theirs, which the end-to-end tests run against
// `kubegate up`. It reconciles Greetings (hello.example.com/v1, the custom
// resource test/e2e/testdata/greetings-crd.yaml defines): it puts its
// finalizer on each, keeps a ConfigMap it controls holding the greeting's
// message and replicas, writes the status (observedGeneration, replicas, a
// Ready condition) through the status subresource, and on deletion does its
// cleanup, a Farewell event and a log line, before it removes its
// finalizer. It reads through the manager's cache, elects no leader and
// serves neither metrics nor health probes.
//
// It lives in a module of its own so that kubegate's module does not
// depend on controller-runtime; build.sh builds it.
package main

import (
	"context"
	"fmt"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// groupVersion is the Greetings' API group and version.
var groupVersion = schema.GroupVersion{Group: "hello.example.com", Version: "v1"}

// finalizer is the operator's finalizer on every Greeting.
const finalizer = "hello.example.com/farewell"

// GreetingSpec is what a Greeting asks for.
type GreetingSpec struct {
	Message  string `json:"message"`
	Replicas int32  `json:"replicas"`
}

// GreetingStatus is what the operator last did.
type GreetingStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Replicas           int32              `json:"replicas,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// Greeting is the custom resource.
type Greeting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GreetingSpec   `json:"spec"`
	Status            GreetingStatus `json:"status,omitempty"`
}

// GreetingList is a list of Greetings.
type GreetingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Greeting `json:"items"`
}

// DeepCopyObject copies g; a condition holds no pointers.
func (g *Greeting) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = slices.Clone(g.Status.Conditions)
	return &out
}

// DeepCopyObject copies l.
func (l *GreetingList) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Greeting, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Greeting)
	}
	return &out
}

// configMapName is the name of the ConfigMap a Greeting controls.
func configMapName(g *Greeting) string { return "greeting-" + g.Name }

// reconciler keeps each Greeting's ConfigMap and status in step with its spec.
type reconciler struct {
	client.Client
	scheme   *runtime.Scheme
	recorder recorder.EventRecorder
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var g Greeting
	if err := r.Get(ctx, req.NamespacedName, &g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !g.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&g, finalizer) {
			return ctrl.Result{}, nil
		}
		// The cleanup: say goodbye. The ConfigMap is left to the garbage
		// collector, which deletes it once the Greeting is gone.
		r.recorder.Eventf(&g, nil, corev1.EventTypeNormal, "Farewell", "Finalize", "said goodbye to %s", g.Name)
		controllerutil.RemoveFinalizer(&g, finalizer)
		if err := r.Update(ctx, &g); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("finalized greeting", "uid", g.UID)
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(&g, finalizer) {
		// The update's event brings the Greeting back with the finalizer.
		return ctrl.Result{}, r.Update(ctx, &g)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: configMapName(&g)}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"message": g.Spec.Message, "replicas": fmt.Sprint(g.Spec.Replicas)}
		return controllerutil.SetControllerReference(&g, cm, r.scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if op != controllerutil.OperationResultNone {
		log.Info("config map "+string(op), "configmap", cm.Name)
	}

	g.Status.ObservedGeneration = g.Generation
	g.Status.Replicas = g.Spec.Replicas
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{
		Type:               "Ready",
		Status:             metav1.ConditionTrue,
		ObservedGeneration: g.Generation,
		Reason:             "ConfigMapInStep",
		Message:            "config map " + cm.Name + " holds the message",
	})
	if err := r.Status().Update(ctx, &g); err != nil {
		// A conflict means a newer Greeting, whose event reconciles again.
		return ctrl.Result{}, client.IgnoreNotFound(ignoreConflict(err))
	}
	return ctrl.Result{}, nil
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func main() {
	ctrl.SetLogger(zap.New())
	if err := run(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	scheme.AddKnownTypes(groupVersion, &Greeting{}, &GreetingList{})
	metav1.AddToGroupVersion(scheme, groupVersion)

	cfg, err := ctrl.GetConfig() // --kubeconfig, or $KUBECONFIG
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	r := &reconciler{Client: mgr.GetClient(), scheme: scheme, recorder: mgr.GetEventRecorder("greeting-operator")}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&Greeting{}).
		Owns(&corev1.ConfigMap{}).
		Complete(r); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
