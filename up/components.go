package up

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	aggregatorclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/kubeconfig"
	"github.com/kubegate/kubegate/nodesim"
	"github.com/kubegate/kubegate/nodesim/metrics"
	"github.com/kubegate/kubegate/scheduler"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

// runComponents runs the selected controllers (controllers/manager; all
// unless c.Controllers says otherwise) and, with c.Nodes, the scheduler and
// c.Nodes simulated nodes, until ctx is done. The controllers always run,
// as kube-controller-manager does in every cluster: without them a deleted
// namespace would stay Terminating and dependents would outlive their
// owners (G.8, G.9). All are API clients of the gateway, as they would be
// of a real cluster: the scheduler with scheduler.conf
// (system:kube-scheduler), the nodes with admin.conf, and the controllers
// as kubeadm runs kube-controller-manager: with controller-manager.conf
// (system:kube-controller-manager) for the shared informers and each
// controller as its own service account in kube-system
// (--use-service-account-credentials, G.15). Among the
// controllers, the node lifecycle taint pass lifts the not-ready taint the
// API server gives each node it registers (TaintNodesByCondition) once the
// node reports Ready.
//
// First it makes the node bindings (NodeBindings: kubeadm init's, and
// one for what kube's Node authorizer allows nodes) and,
// with NodeBootstrap, the nodes' bootstrap token and kubeconfig (H.5).
//
// The components restart, as kube's would be restarted, when a kubeconfig
// they were built from changes: a CA rotation (H.6) rewrites its CA data
// and client certificate, which client-go reads only at start.
func (c *Cluster) runComponents(ctx context.Context, logger *slog.Logger) error {
	files := []string{filepath.Join(c.Dir, "controller-manager.conf")}
	if c.Nodes > 0 {
		files = append(files, filepath.Join(c.Dir, "scheduler.conf"), filepath.Join(c.Dir, "admin.conf"))
	}
	if err := c.prepareNodes(ctx); err != nil {
		return err
	}
	t := time.NewTicker(componentsReloadInterval)
	defer t.Stop()
	for {
		sum := digestFiles(files)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.runComponentsOnce(runCtx, logger) }()
	wait:
		for {
			select {
			case err := <-done:
				stop()
				return err
			case <-t.C:
				if digestFiles(files) != sum {
					break wait
				}
			}
		}
		stop()
		if err := <-done; err != nil || ctx.Err() != nil {
			return err
		}
		logger.Info("a kubeconfig of the components changed; restarting them with it", "files", files)
	}
}

// componentsReloadInterval is how often runComponents looks at the
// components' kubeconfigs.
const componentsReloadInterval = time.Second

// digestFiles hashes the contents of files; one that cannot be read adds
// nothing (kubegate replaces files by rename, so they never go missing).
func digestFiles(files []string) [sha256.Size]byte {
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		h.Write(data)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

func (c *Cluster) runComponentsOnce(ctx context.Context, logger *slog.Logger) error {
	controllerConfig, err := kubeconfig.RESTConfig(filepath.Join(c.Dir, "controller-manager.conf"), -1, 0)
	if err != nil {
		return err
	}
	runControllers := func(ctx context.Context) error {
		// The CSR signer signs with the cluster CA, as kubeadm's
		// kube-controller-manager --cluster-signing-cert-file and
		// --cluster-signing-key-file point it at.
		return manager.Run(ctx, manager.Options{Config: controllerConfig, Controllers: c.Controllers, UseServiceAccountCredentials: true,
			Logger:          logger.With("component", "controllers"),
			SigningCertFile: filepath.Join(c.Dir, "pki", "ca.crt"), SigningKeyFile: filepath.Join(c.Dir, "pki", "ca.key"),
			SigningDuration: c.SigningDuration, HPA: c.HPA})
	}
	runs := []func(context.Context) error{runControllers}
	if c.Nodes > 0 {
		schedClient, err := clientFromKubeconfig(filepath.Join(c.Dir, "scheduler.conf"), 50, 100) // kube-scheduler's client defaults
		if err != nil {
			return err
		}
		// Events go through a client of their own with the same limits, as
		// kube-scheduler's do: they do not slow bindings.
		eventClient, err := clientFromKubeconfig(filepath.Join(c.Dir, "scheduler.conf"), 50, 100)
		if err != nil {
			return err
		}
		nodeClient, err := clientFromKubeconfig(filepath.Join(c.Dir, "admin.conf"), -1, 0) // status writes for every pod
		if err != nil {
			return err
		}
		factory := scheduler.NewInformerFactory(schedClient)
		profile, err := plugins.DefaultProfile(plugins.Args{Spread: scheduler.NewSpreadSources(factory),
			Volumes: scheduler.NewVolumeSources(factory), VolumeClient: schedClient})
		if err != nil {
			return err
		}
		sched, err := scheduler.New(scheduler.Config{Client: schedClient, EventClient: eventClient, Profile: profile, Factory: factory,
			Logger: logger.With("component", "scheduler")})
		if err != nil {
			return err
		}
		so := nodesim.Options{Count: c.Nodes, RunningDelay: nodesim.DefaultRunningDelay, PodRunTime: c.PodRunTime, Logger: logger.With("component", "nodes")}
		if c.NodeBootstrap {
			// Each node's own identity, system:node:NAME, serves its
			// certificate requests; its node, lease and pod writes still
			// go through nodeClient, as kubegate has no node authorizer
			// to confine a node to its own objects (H.5).
			cfg, err := kubeconfig.RESTConfig(filepath.Join(c.Dir, BootstrapKubeconfig), -1, 0)
			if err != nil {
				return err
			}
			so.Bootstrap = &nodesim.Bootstrap{Config: cfg}
		}
		sim, err := nodesim.New(nodeClient, so)
		if err != nil {
			return err
		}
		runMetrics, err := c.metricsServer(logger)
		if err != nil {
			return err
		}
		runs = append(runs, sched.Run, sim.Run, runMetrics)
	}
	errc := make(chan error, len(runs))
	for _, run := range runs {
		go func() { errc <- run(ctx) }()
	}
	var errs []error
	for range runs {
		errs = append(errs, <-errc)
	}
	return errors.Join(errs...)
}

func clientFromKubeconfig(path string, qps float32, burst int) (*kubernetes.Clientset, error) {
	cfg, err := kubeconfig.RESTConfig(path, qps, burst)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// metricsServer returns the run of the simulated nodes' metrics server
// (nodesim/metrics, I.4), registered as kube-system/metrics-server and
// v1beta1.metrics.k8s.io, as metrics-server is in kubeadm clusters, and
// reached by the API server's aggregator with the front-proxy client
// certificate.
func (c *Cluster) metricsServer(logger *slog.Logger) (func(context.Context) error, error) {
	cfg, err := kubeconfig.RESTConfig(filepath.Join(c.Dir, "admin.conf"), -1, 0)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	apis, err := aggregatorclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mc := metrics.Config{Client: client, APIServices: apis, FrontProxyCAFile: filepath.Join(c.Dir, "pki", "front-proxy-ca.crt"),
		AllowedNames: []string{"front-proxy-client"}, Options: metrics.Options{UsagePercent: c.UsagePercent, Logger: logger.With("component", "metrics-server")}}
	// Without it the cluster still runs, only kubectl top does not: a
	// metrics server that cannot start (a machine with no address an
	// EndpointSlice may name) says why and stops alone.
	return func(ctx context.Context) error {
		if err := metrics.Run(ctx, mc); err != nil && ctx.Err() == nil {
			logger.Error("the metrics server stopped; kubectl top and autoscalers get no metrics", "err", err)
		}
		return nil
	}, nil
}
