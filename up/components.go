package up

import (
	"context"
	"log/slog"
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/kubeconfig"
	"github.com/kubegate/kubegate/nodesim"
	"github.com/kubegate/kubegate/scheduler"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

// runComponents runs the scheduler and c.Nodes simulated nodes until ctx
// is done. Both are API clients of the gateway, as they would be of a real
// cluster: the scheduler with scheduler.conf (system:kube-scheduler), the
// nodes with admin.conf.
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
	errc := make(chan error, 2)
	go func() { errc <- sched.Run(ctx) }()
	go func() { errc <- sim.Run(ctx) }()
	first := <-errc
	second := <-errc
	if first != nil {
		return first
	}
	return second
}

func clientFromKubeconfig(path string, qps float32, burst int) (*kubernetes.Clientset, error) {
	cfg, err := kubeconfig.RESTConfig(path, qps, burst)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
