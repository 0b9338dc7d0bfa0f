// Package manager runs kubegate's controllers together, as
// kube-controller-manager runs its own: one set of shared informers, every
// selected controller built from it, the informers started, then every
// controller run until the context is done.
package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/admissionpolicystatus"
	"github.com/kubegate/kubegate/controllers/clusterroleaggregation"
	"github.com/kubegate/kubegate/controllers/cronjob"
	"github.com/kubegate/kubegate/controllers/csrapproving"
	"github.com/kubegate/kubegate/controllers/csrcleaner"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/controllers/daemonset"
	"github.com/kubegate/kubegate/controllers/deployment"
	"github.com/kubegate/kubegate/controllers/disruption"
	"github.com/kubegate/kubegate/controllers/endpoints"
	"github.com/kubegate/kubegate/controllers/endpointslice"
	"github.com/kubegate/kubegate/controllers/garbagecollector"
	"github.com/kubegate/kubegate/controllers/job"
	"github.com/kubegate/kubegate/controllers/namespace"
	"github.com/kubegate/kubegate/controllers/nodelifecycle"
	"github.com/kubegate/kubegate/controllers/persistentvolume"
	"github.com/kubegate/kubegate/controllers/podautoscaler"
	"github.com/kubegate/kubegate/controllers/podgc"
	"github.com/kubegate/kubegate/controllers/replicaset"
	"github.com/kubegate/kubegate/controllers/resourcequota"
	"github.com/kubegate/kubegate/controllers/rootcacert"
	"github.com/kubegate/kubegate/controllers/serviceaccount"
	"github.com/kubegate/kubegate/controllers/statefulset"
	"github.com/kubegate/kubegate/controllers/tainteviction"
	"github.com/kubegate/kubegate/controllers/ttlafterfinished"
	"github.com/kubegate/kubegate/controllers/volumeprotection"
	"github.com/kubegate/kubegate/internal/cachetrim"
)

// All lists every controller kubegate has, in the order they start.
var All = []controllers.Descriptor{
	nodelifecycle.Descriptor,
	tainteviction.Descriptor,
	daemonset.Descriptor,
	statefulset.Descriptor,
	replicaset.Descriptor,
	replicaset.RCDescriptor,
	rootcacert.Descriptor,
	deployment.Descriptor,
	disruption.Descriptor,
	namespace.Descriptor,
	garbagecollector.Descriptor,
	endpoints.Descriptor,
	endpointslice.Descriptor,
	serviceaccount.Descriptor,
	job.Descriptor,
	cronjob.Descriptor,
	ttlafterfinished.Descriptor,
	csrapproving.Descriptor,
	csrsigning.Descriptor,
	csrcleaner.Descriptor,
	clusterroleaggregation.Descriptor,
	admissionpolicystatus.Descriptor,
	podautoscaler.Descriptor,
	persistentvolume.Descriptor,
	persistentvolume.ExpanderDescriptor,
	volumeprotection.ClaimDescriptor,
	volumeprotection.VolumeDescriptor,
	resourcequota.Descriptor,
	podgc.Descriptor,
}

// Names returns the names of All.
func Names() []string {
	names := make([]string, len(All))
	for i, d := range All {
		names[i] = d.Name
	}
	return names
}

// Select returns the controllers a --controllers list names, in All's
// order, with kube-controller-manager's syntax: "*" is every controller,
// "NAME" turns one on and "-NAME" turns one off; an empty list is "*".
// An unknown name is an error naming it.
func Select(list []string) ([]controllers.Descriptor, error) {
	if len(list) == 0 {
		list = []string{"*"}
	}
	known := Names()
	all := false
	on, off := map[string]bool{}, map[string]bool{}
	for _, item := range list {
		name, disable := strings.CutPrefix(strings.TrimSpace(item), "-")
		switch {
		case name == "*" && !disable:
			all = true
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("--controllers: %q is not a controller (known: %s)", item, strings.Join(known, ", "))
		case disable:
			off[name] = true
		default:
			on[name] = true
		}
	}
	var out []controllers.Descriptor
	for _, d := range All {
		if (all || on[d.Name]) && !off[d.Name] {
			out = append(out, d)
		}
	}
	return out, nil
}

// Options configure Run.
type Options struct {
	// Config reaches the API server as the manager's identity
	// (controller-manager.conf's system:kube-controller-manager in a
	// kubeadm cluster): the shared informers read with it, and so do the
	// controllers unless UseServiceAccountCredentials.
	Config *rest.Config
	// UseServiceAccountCredentials runs each controller as its
	// Descriptor's ServiceAccount in kube-system, which the manager
	// creates when missing, with tokens from the TokenRequest API, as
	// kube-controller-manager --use-service-account-credentials does
	// (docs/kubernetes-behaviour.md G.15).
	UseServiceAccountCredentials bool
	// Controllers is the --controllers list (see Select).
	Controllers []string
	// Descriptors, when set, are the controllers to run instead of those
	// Controllers selects (tests run one controller, or one of their own).
	Descriptors []controllers.Descriptor
	// Logger receives every controller's logs, labelled with its name;
	// nil means slog.Default().
	Logger *slog.Logger
	// Now is the controllers' clock; nil means time.Now.
	Now func() time.Time
	// RootCA is the cluster CA bundle the root CA publisher publishes
	// (--root-ca-file); nil means the CA in Config.
	RootCA []byte
	// SigningCertFile, SigningKeyFile and SigningDuration are the CSR
	// signer's CA files and longest lifetime (--cluster-signing-cert-file,
	// --cluster-signing-key-file, --cluster-signing-duration).
	SigningCertFile, SigningKeyFile string
	SigningDuration                 time.Duration
	// HPA are the horizontal pod autoscaler's settings
	// (--horizontal-pod-autoscaler-*); the zero value is kube's defaults.
	HPA controllers.HPASettings
}

// Run builds the selected controllers, starts the shared informers and
// runs the controllers until ctx is done, or until one fails to start,
// which stops the others. It returns the errors of the controllers that
// failed.
func Run(ctx context.Context, o Options) error {
	selected := o.Descriptors
	if selected == nil {
		var err error
		if selected, err = Select(o.Controllers); err != nil {
			return err
		}
	}
	if o.Config == nil {
		return errors.New("controllers: a REST config is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	// Warnings the API server attaches to answers (v1 Endpoints are
	// deprecated) are for people; a controller would log one per write.
	o.Config = rest.CopyConfig(o.Config)
	o.Config.WarningHandler = rest.NoWarnings{}
	core, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	clients := &clientBuilder{root: o.Config, serviceAccounts: o.UseServiceAccountCredentials, core: core,
		logger: o.Logger, tokens: map[string]transport.ResettableTokenSource{}, retryDelay: tokenRetryDelay}
	rootCA, err := rootCAOf(o)
	if err != nil {
		return err
	}
	if err := waitForAPIServer(ctx, core, apiServerWait); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// The shared informers read as the manager itself, whatever the
	// controllers write as.
	informerClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(o.Config), "shared-informers"))
	if err != nil {
		return err
	}
	informerMeta, err := metadata.NewForConfig(rest.AddUserAgent(rest.CopyConfig(o.Config), "metadata-informers"))
	if err != nil {
		return err
	}
	typed := informers.NewSharedInformerFactoryWithOptions(informerClient, 0, informers.WithTransform(cachetrim.StripManagedFields))
	metaInformers := metadatainformer.NewSharedInformerFactoryWithOptions(informerMeta, 0,
		metadatainformer.WithTransform(cachetrim.StripManagedFields))
	// Cancelled when a controller fails too: the controllers' token
	// requests stop with them.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var runs []controllers.Controller
	var names []string
	for _, d := range selected {
		c, err := build(ctx, d, clients, &controllers.Context{Informers: typed, MetadataInformers: metaInformers,
			Logger: o.Logger.With("controller", d.Name), Now: o.Now, RootCA: rootCA,
			SigningCertFile: o.SigningCertFile, SigningKeyFile: o.SigningKeyFile, SigningDuration: o.SigningDuration,
			HPA: o.HPA})
		if err != nil && ctx.Err() != nil {
			return nil // stopped while starting: not a failure
		}
		if err != nil {
			return fmt.Errorf("controller %s: %w", d.Name, err)
		}
		runs = append(runs, c)
		names = append(names, d.Name)
	}
	typed.Start(ctx.Done())
	metaInformers.Start(ctx.Done())
	defer typed.Shutdown()
	defer metaInformers.Shutdown()
	o.Logger.Info("controllers started", "controllers", strings.Join(names, ","))
	errc := make(chan error, len(runs))
	for i, c := range runs {
		go func() {
			if err := c.Run(ctx); err != nil {
				cancel() // a controller that cannot run stops the manager, as in kube
				errc <- fmt.Errorf("controller %s: %w", names[i], err)
				return
			}
			errc <- nil
		}()
	}
	if len(runs) == 0 {
		<-ctx.Done() // nothing selected: run, doing nothing, until done
		return nil
	}
	var errs []error
	for range runs {
		errs = append(errs, <-errc)
	}
	return errors.Join(errs...)
}

// build gives c the controller's own clients and builds the controller.
func build(ctx context.Context, d controllers.Descriptor, clients *clientBuilder, c *controllers.Context) (controllers.Controller, error) {
	name := d.ServiceAccount
	if name == "" {
		name = d.Name
	}
	cfg, err := clients.config(ctx, name, d.ServiceAccount)
	if err != nil {
		return nil, err
	}
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	c.Config = cfg
	return d.New(c)
}

// apiServerWait is how long Run waits for the API server to be healthy.
const apiServerWait = 30 * time.Second

// waitForAPIServer polls the API server's /healthz every second until it
// answers ok, as kube-controller-manager waits before it starts its
// controllers, for at most limit.
func waitForAPIServer(ctx context.Context, client kubernetes.Interface, limit time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(ctx context.Context) (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/healthz").Do(ctx).Raw()
		if err == nil && string(body) == "ok" {
			return true, nil
		}
		last = err
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the API server was not healthy within %v: %v", limit, last)
	}
	return nil
}

// rootCAOf is o.RootCA, else the CA bundle o.Config trusts.
func rootCAOf(o Options) ([]byte, error) {
	switch {
	case len(o.RootCA) > 0:
		return o.RootCA, nil
	case len(o.Config.CAData) > 0:
		return o.Config.CAData, nil
	case o.Config.CAFile != "":
		data, err := os.ReadFile(o.Config.CAFile)
		if err != nil {
			return nil, fmt.Errorf("the API server's CA: %w", err)
		}
		return data, nil
	}
	return nil, nil
}
