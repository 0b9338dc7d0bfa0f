package up

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/controllers/nodelifecycle"
	"github.com/kubegate/kubegate/kubeconfig"
	"github.com/kubegate/kubegate/nodesim"
	"github.com/kubegate/kubegate/scheduler"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

// runComponents runs the scheduler, c.Nodes simulated nodes and the node
// lifecycle controller's NoSchedule taint pass until ctx is done. All are
// API clients of the gateway, as they would be of a real cluster: the
// scheduler with scheduler.conf (system:kube-scheduler), the nodes and the
// taint pass with admin.conf (kube's node controller runs under a service
// account of its own, whose role kubegate's bootstrap policy lacks). The
// taint pass lifts the not-ready taint the API server gives each node it
// registers (TaintNodesByCondition) once the node reports Ready.
func (c *Cluster) runComponents(ctx context.Context, logger *slog.Logger) error {
	schedClient, err := clientFromKubeconfig(filepath.Join(c.Dir, "scheduler.conf"), 50, 100) // kube-scheduler's client defaults
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
	sched, err := scheduler.New(scheduler.Config{Client: schedClient, Profile: profile, Factory: factory,
		Logger: logger.With("component", "scheduler")})
	if err != nil {
		return err
	}
	sim, err := nodesim.New(nodeClient, nodesim.Options{Count: c.Nodes, RunningDelay: nodesim.DefaultRunningDelay,
		Logger: logger.With("component", "nodes")})
	if err != nil {
		return err
	}
	lifecycle, err := nodelifecycle.New(nodeClient, nodelifecycle.Options{Logger: logger.With("component", "nodelifecycle")})
	if err != nil {
		return err
	}
	runs := []func(context.Context) error{sched.Run, sim.Run, lifecycle.Run}
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
