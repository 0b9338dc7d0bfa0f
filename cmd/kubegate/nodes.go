package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/kubeconfig"
	"github.com/kubegate/kubegate/nodesim"
)

type nodesSimulateOptions struct {
	kubeconfig, prefix, labels, taints string
	bootstrapKubeconfig                string
	cpu, memory, pods, storage         string
	count                              int
	runningDelay, heartbeat, status    time.Duration
	readyAfter, completeAfter          time.Duration
	podRunTime                         time.Duration
	exitCode                           int32
}

func (o *nodesSimulateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of an identity that may write nodes, nodes/status, leases in kube-node-lease, pods/status and delete pods")
	fs.StringVar(&o.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with a bootstrap token: each node first gets its own client certificate (system:node:NAME) through the CSR API with it, and renews it, as the kubelet's flag")
	fs.IntVar(&o.count, "count", 0, fmt.Sprintf("number of nodes to simulate (1 to %d)", nodesim.MaxCount))
	fs.StringVar(&o.prefix, "name-prefix", nodesim.DefaultPrefix, "node names are this prefix plus 1, 2, …")
	fs.StringVar(&o.cpu, "cpu", nodesim.DefaultCPU.String(), "CPU capacity (and allocatable) of each node")
	fs.StringVar(&o.memory, "memory", nodesim.DefaultMemory.String(), "memory capacity of each node")
	fs.StringVar(&o.pods, "pods", nodesim.DefaultPods.String(), fmt.Sprintf("pod capacity of each node (at most %d)", nodesim.MaxPods))
	fs.StringVar(&o.storage, "ephemeral-storage", nodesim.DefaultEphemeralStorage.String(), "ephemeral-storage capacity of each node")
	fs.StringVar(&o.labels, "labels", "", "extra node labels, key=value,…")
	fs.StringVar(&o.taints, "taints", "", "node taints, key[=value]:NoSchedule|PreferNoSchedule|NoExecute,…")
	fs.DurationVar(&o.runningDelay, "running-delay", nodesim.DefaultRunningDelay, "how long a bound pod shows ContainerCreating before it is Running")
	fs.DurationVar(&o.readyAfter, "ready-after", 0, "how long after its containers start a pod becomes Ready, unless annotated "+nodesim.AnnotationReadyAfter)
	fs.DurationVar(&o.completeAfter, "complete-after", 0, "how long after they start a pod's containers exit, unless annotated "+nodesim.AnnotationCompleteAfter+" (0: they never do)")
	fs.Int32Var(&o.exitCode, "exit-code", 0, "the code they exit with (0 to 255), unless annotated "+nodesim.AnnotationExitCode)
	addPodRunTimeFlag(fs, &o.podRunTime)
	fs.DurationVar(&o.heartbeat, "heartbeat-interval", nodesim.DefaultHeartbeatInterval, "how often each node's lease is renewed")
	fs.DurationVar(&o.status, "status-interval", nodesim.DefaultStatusInterval, "how often each node's condition heartbeats are written")
}

// addPodRunTimeFlag registers --pod-run-time, which `kubegate nodes
// simulate` and `kubegate up` share (docs/kubernetes-behaviour.md, G.13).
func addPodRunTimeFlag(fs *pflag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "pod-run-time", nodesim.DefaultPodRunTime, "how long after they start the containers of a pod with restartPolicy Never or OnFailure exit (code 0, or that of the "+
		nodesim.AnnotationExitCode+" annotation), unless --complete-after or the "+nodesim.AnnotationCompleteAfter+" annotation says otherwise, so that Jobs and test pods finish; pods with restartPolicy Always run until deleted (0: these too)")
}

// simOptions parses and checks the flags as nodesim.Options.
func (o *nodesSimulateOptions) simOptions() (nodesim.Options, error) {
	so := nodesim.Options{Count: o.count, Prefix: o.prefix, RunningDelay: o.runningDelay,
		HeartbeatInterval: o.heartbeat, StatusInterval: o.status,
		ReadyAfter: o.readyAfter, CompleteAfter: o.completeAfter, ExitCode: o.exitCode, PodRunTime: o.podRunTime}
	if o.count < 1 {
		return so, fmt.Errorf("--count %d: want 1 to %d nodes", o.count, nodesim.MaxCount)
	}
	if o.heartbeat <= 0 || o.status <= 0 {
		return so, errors.New("--heartbeat-interval and --status-interval must be positive")
	}
	if o.readyAfter < 0 || o.completeAfter < 0 {
		return so, errors.New("--ready-after and --complete-after must not be negative")
	}
	if o.podRunTime < 0 {
		return so, fmt.Errorf("--pod-run-time %v: must not be negative", o.podRunTime)
	}
	if o.exitCode < 0 || o.exitCode > 255 {
		return so, fmt.Errorf("--exit-code %d: want 0 to 255", o.exitCode)
	}
	for _, q := range []struct {
		flag, val string
		dst       *resource.Quantity
	}{{"cpu", o.cpu, &so.CPU}, {"memory", o.memory, &so.Memory}, {"pods", o.pods, &so.Pods}, {"ephemeral-storage", o.storage, &so.EphemeralStorage}} {
		v, err := resource.ParseQuantity(q.val)
		if err != nil {
			return so, fmt.Errorf("--%s %q: not a quantity (examples: 4, 500m, 16Gi)", q.flag, q.val)
		}
		if v.Sign() <= 0 {
			return so, fmt.Errorf("--%s %s: must be positive", q.flag, q.val)
		}
		*q.dst = v
	}
	var err error
	if so.Labels, err = nodesim.ParseLabels(o.labels); err != nil {
		return so, fmt.Errorf("--labels: %w", err)
	}
	if so.Taints, err = nodesim.ParseTaints(o.taints); err != nil {
		return so, fmt.Errorf("--taints: %w", err)
	}
	return so, so.Validate()
}

// simulatorClient is a client for path without client-side rate limiting:
// the simulator bounds its own concurrency, and thousands of nodes renew a
// lease every few seconds.
func simulatorClient(path string) (kubernetes.Interface, error) { return clientFor(path, -1, 0) }

func newNodesCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Simulated nodes",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newNodesSimulateCmd(s))
	return cmd
}

func newNodesSimulateCmd(s streams) *cobra.Command {
	o := &nodesSimulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate --kubeconfig FILE --count N [--cpu 4] [--memory 16Gi] [--pods 110] [--labels k=v,…] [--taints k=v:Effect,…]",
		Short: "Register simulated nodes and run the pods bound to them, like kubelets that run nothing",
		Long: `Register N Node objects (name-prefix1 … name-prefixN) with the given
capacity, labels and taints, renew their leases in kube-node-lease, and move
every pod bound to them to Running after --running-delay, with a pod IP from
the node's 10.244.x.0/24, Ready conditions and running container statuses.
A deleted pod is reported terminated and removed. With --bootstrap-kubeconfig
each node first gets its client certificate through the CSR API and keeps it
renewed, as a kubelet joining with a bootstrap token does. No container is run: a pod
whose command would exit stays Running until it is deleted.
Runs until interrupted; the nodes stay registered.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveUntilSignal(cmd.Context(), nil, func(ctx context.Context) error { return runNodesSimulate(ctx, o, s) })
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// runNodesSimulate runs the simulator until ctx is done.
func runNodesSimulate(ctx context.Context, o *nodesSimulateOptions, s streams) error {
	so, err := o.simOptions()
	if err != nil {
		return err
	}
	if o.bootstrapKubeconfig != "" {
		cfg, err := kubeconfig.RESTConfig(o.bootstrapKubeconfig, -1, 0)
		if err != nil {
			return fmt.Errorf("--bootstrap-kubeconfig %s: %w", o.bootstrapKubeconfig, err)
		}
		so.Bootstrap = &nodesim.Bootstrap{Config: cfg}
	}
	client, err := simulatorClient(o.kubeconfig)
	if err != nil {
		return err
	}
	so.Logger = slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sim, err := nodesim.New(client, so)
	if err != nil {
		return err
	}
	names := sim.NodeNames()
	fmt.Fprintf(s.err, "registering %d simulated nodes (%s … %s); bound pods turn Running after %v; stop with Ctrl-C\n",
		len(names), names[0], names[len(names)-1], so.RunningDelay)
	return sim.Run(ctx)
}
