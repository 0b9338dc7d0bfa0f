// Package rootcacert is kube-controller-manager's root CA certificate
// publisher: every namespace gets a ConfigMap kube-root-ca.crt with the
// cluster's CA bundle under ca.crt, so that pods can verify the API server
// at its in-cluster addresses; a changed or deleted one is put back
// (docs/kubernetes-behaviour.md, G.16).
//
// The identity it runs as needs: configmaps list, watch, create, update;
// namespaces list, watch.
package rootcacert

import (
	"context"
	"errors"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/controllers"
)

// The ConfigMap's name, and the annotation that says what it is for, as
// kube writes them.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints " +
		"such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Descriptor runs the publisher in the controller manager.
// Without a CA bundle (a manager that reaches the API server over plain
// HTTP and was given none) it publishes nothing and says so.
var Descriptor = controllers.Descriptor{Name: "root-ca-cert-publisher", ServiceAccount: "root-ca-cert-publisher",
	New: func(c *controllers.Context) (controllers.Controller, error) {
		if len(c.RootCA) == 0 {
			c.Logger.Warn("no cluster CA bundle: kube-root-ca.crt is not published")
			return controllers.Func(func(ctx context.Context) error { <-ctx.Done(); return nil }), nil
		}
		return New(c)
	}}

// workers is how many namespaces are brought in step at once.
const workers = 1

// Publisher keeps kube-root-ca.crt in every namespace.
type Publisher struct {
	client     kubernetes.Interface
	log        *slog.Logger
	rootCA     string
	configMaps corelisters.ConfigMapLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New builds the publisher from c; c.RootCA must hold the bundle.
func New(c *controllers.Context) (*Publisher, error) {
	if len(c.RootCA) == 0 {
		return nil, errors.New("no root CA to publish: give the manager one")
	}
	cms := c.Informers.Core().V1().ConfigMaps()
	nss := c.Informers.Core().V1().Namespaces()
	p := &Publisher{client: c.Client, log: c.Logger, rootCA: string(c.RootCA), configMaps: cms.Lister(),
		synced: []cache.InformerSynced{cms.Informer().HasSynced, nss.Informer().HasSynced},
		queue:  controllers.NewQueue("root_ca_cert_publisher")}
	onConfigMap := func(obj any) {
		obj = controllers.Unwrap(obj)
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == ConfigMapName {
			p.queue.Add(cm.Namespace)
		}
	}
	if _, err := cms.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) { onConfigMap(cur) },
		DeleteFunc: onConfigMap,
	}); err != nil {
		return nil, err
	}
	if _, err := nss.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { p.queue.Add(obj.(*corev1.Namespace).Name) },
		UpdateFunc: func(_, cur any) {
			if ns := cur.(*corev1.Namespace); ns.Status.Phase == corev1.NamespaceActive {
				p.queue.Add(ns.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	return p, nil
}

// Run works until ctx is done.
func (p *Publisher) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, "root-ca-cert-publisher", p.queue, workers, p.log, p.sync, p.synced...)
}

// sync puts the ConfigMap of namespace ns in step: created when missing
// (unless the namespace is gone or being deleted), its data and
// description restored when they differ; other annotations and labels
// are left as they are.
func (p *Publisher) sync(ctx context.Context, ns string) error {
	want := map[string]string{"ca.crt": p.rootCA}
	cm, err := p.configMaps.ConfigMaps(ns).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err = p.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       want,
		}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) || apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if maps.Equal(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	_, err = p.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
