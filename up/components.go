package up

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/kubeconfig"
	"github.com/kubegate/kubegate/nodesim"
	"github.com/kubegate/kubegate/scheduler"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

// runComponents runs the scheduler, c.Nodes simulated nodes and every
// controller (controllers/manager) until ctx is done. All are API clients
// of the gateway, as they would be of a real cluster: the scheduler with
// scheduler.conf (system:kube-scheduler), the nodes and the controllers
// with admin.conf (kube's controllers run under service accounts of their
// own, whose roles kubegate's bootstrap policy lacks). Among the
// controllers, the node lifecycle taint pass lifts the not-ready taint the
// API server gives each node it registers (TaintNodesByCondition) once the
// node reports Ready.
func (c *Cluster) runComponents(ctx context.Context, logger *slog.Logger) error {
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
	profile, err := plugins.DefaultProfile(plugins.Args{Spread: scheduler.NewSpreadSources(factory)})
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scheduler.Config{Client: schedClient, EventClient: eventClient, Profile: profile, Factory: factory,
		Logger: logger.With("component", "scheduler")})
	if err != nil {
		return err
	}
	sim, err := nodesim.New(nodeClient, nodesim.Options{Count: c.Nodes, RunningDelay: nodesim.DefaultRunningDelay,
		Logger: logger.With("component", "nodes")})
	if err != nil {
		return err
	}
	controllerConfig, err := kubeconfig.RESTConfig(filepath.Join(c.Dir, "admin.conf"), -1, 0)
	if err != nil {
		return err
	}
	runControllers := func(ctx context.Context) error {
		return manager.Run(ctx, manager.Options{Config: controllerConfig, Logger: logger.With("component", "controllers")})
	}
	runs := []func(context.Context) error{sched.Run, sim.Run, runControllers}
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
