// Package controllers holds what kubegate's controllers share: the
// Context each is built from and the Controller each returns. The
// controllers themselves live in the packages below this one, one per
// kube-controller-manager controller, and controllers/manager runs them,
// in `kubegate up` and as `kubegate controllers --kubeconfig FILE`, the
// way kube-controller-manager runs against any API server
// (docs/architecture.md, "Controllers").
//
// Every controller is an API client only: it reads through the shared
// informers of its Context and writes through its Client, so it runs the
// same against kubegate's API server and against kube-apiserver.
package controllers

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
)

// Context is what a controller is built from. The informer factories are
// shared by every controller the manager runs, as kube-controller-
// manager's are: a controller asks a factory for the informers it needs
// in its constructor, and the manager starts the factories once every
// controller has been built, before it runs them. A controller's Run
// waits for the caches it reads (cache.WaitForCacheSync).
type Context struct {
	// Client writes, and reads what is not cached, as the controller's
	// identity: its service account with service-account credentials,
	// else the manager's (the informers always read as the manager).
	Client kubernetes.Interface
	// Metadata reads and watches any resource's metadata only (the
	// garbage collector's and namespace controller's view).
	Metadata metadata.Interface
	// Config is the REST configuration Client and Metadata were made
	// from, for a controller that needs a client of its own kind (the
	// dynamic client for deleting any resource).
	Config *rest.Config
	// Informers are the typed shared informers; objects are cached
	// without their managedFields.
	Informers informers.SharedInformerFactory
	// MetadataInformers are the shared metadata-only informers.
	MetadataInformers metadatainformer.SharedInformerFactory
	// Logger receives the controller's logs, already labelled with its
	// name.
	Logger *slog.Logger
	// Now is the controller's clock; tests set it.
	Now func() time.Time
	// RootCA is the PEM bundle of the cluster's CA that the root CA
	// publisher puts in every namespace: kube-controller-manager's
	// --root-ca-file, else the CA the manager trusts the API server
	// with.
	RootCA []byte
	// SigningCertFile and SigningKeyFile hold the cluster CA the CSR
	// signer signs with (kube-controller-manager's
	// --cluster-signing-cert-file and --cluster-signing-key-file); the
	// signer reads them again when they change. Empty: no signing.
	SigningCertFile, SigningKeyFile string
	// SigningDuration is the longest lifetime the CSR signer gives a
	// certificate (--cluster-signing-duration); 0 means a year.
	SigningDuration time.Duration
	// HPA are the horizontal pod autoscaler's settings; the zero value
	// is kube's defaults.
	HPA HPASettings
}

// Controller is one running controller.
type Controller interface {
	// Run works until ctx is done. It returns nil then, and an error only
	// when the controller cannot start (its caches never fill).
	Run(ctx context.Context) error
}

// Descriptor names a controller and builds it.
type Descriptor struct {
	// Name is the controller's name in kube-controller-manager's
	// --controllers flag: "deployment", "replicaset", "garbagecollector".
	Name string
	// ServiceAccount is the service account in kube-system the controller
	// runs as when the manager uses service-account credentials, the one
	// kube-controller-manager gives it and kube-apiserver's default policy
	// binds to its system:controller: role: "deployment-controller",
	// "replicaset-controller", "generic-garbage-collector"
	// (docs/kubernetes-behaviour.md G.15). Empty means the manager's own
	// identity.
	ServiceAccount string
	// New builds the controller from c. It registers the informers it
	// needs and must not start anything.
	New func(c *Context) (Controller, error)
}

// Func adapts a function to Controller.
type Func func(ctx context.Context) error

// Run calls f.
func (f Func) Run(ctx context.Context) error { return f(ctx) }
