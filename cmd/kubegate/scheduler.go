package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/internal/leaderelect"
	"github.com/kubegate/kubegate/kubeconfig"
	"github.com/kubegate/kubegate/scheduler"
	"github.com/kubegate/kubegate/scheduler/config"
	"github.com/kubegate/kubegate/scheduler/explain"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

type schedulerOptions struct {
	conn      apiConnection
	config    string
	verbosity int
	election  *leaderelect.Options
}

func (o *schedulerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.conn.kubeconfig, "kubeconfig", "", "kubeconfig of the scheduler's identity (scheduler.conf, user system:kube-scheduler)")
	fs.StringVar(&o.config, "config", "", "KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1 subset); default the default profile")
	fs.Float32Var(&o.conn.qps, "kube-api-qps", 50, "requests per second to the API server, for bindings and for events each (kube-scheduler's default); negative turns the limit off")
	fs.IntVar(&o.conn.burst, "kube-api-burst", 100, "burst of requests to the API server (kube-scheduler's default)")
	fs.IntVarP(&o.verbosity, "v", "v", 0, "log every attempt to stderr like kube-scheduler at this verbosity (2: outcome, 5: filter failures, 10: every score)")
	o.conn.addFlags(fs)
	o.election.BindFlags(fs)
}

// validate checks the flags that need no file or server.
func (o *schedulerOptions) validate() error {
	if err := o.conn.validate(); err != nil {
		return err
	}
	return o.election.Validate()
}

// apiConnection is how kube-scheduler and kube-controller-manager reach
// the API server: --kubeconfig, --master, --kube-api-content-type,
// --kube-api-qps and --kube-api-burst, with each command's defaults
// (docs/kubernetes-behaviour.md J.1).
type apiConnection struct {
	kubeconfig, master, contentType string
	qps                             float32
	burst                           int
}

// addFlags registers --master and --kube-api-content-type; each command
// registers the others with its own defaults and help.
func (c *apiConnection) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.master, "master", "", "the API server's URL, instead of the kubeconfig's")
	fs.StringVar(&c.contentType, "kube-api-content-type", runtime.ContentTypeProtobuf,
		"the media type of requests to the API server: "+runtime.ContentTypeProtobuf+" or "+runtime.ContentTypeJSON)
}

func (c *apiConnection) validate() error {
	if c.contentType != runtime.ContentTypeProtobuf && c.contentType != runtime.ContentTypeJSON {
		return fmt.Errorf("--kube-api-content-type %q: want %s or %s", c.contentType, runtime.ContentTypeProtobuf, runtime.ContentTypeJSON)
	}
	if c.burst < 0 {
		return fmt.Errorf("--kube-api-burst %d: must be non-negative", c.burst)
	}
	return nil
}

// restConfig is the client configuration the flags give.
func (c *apiConnection) restConfig() (*rest.Config, error) {
	if c.kubeconfig == "" {
		return nil, errors.New("--kubeconfig is required")
	}
	rc, err := kubeconfig.RESTConfig(c.kubeconfig, c.qps, c.burst)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", c.kubeconfig, err)
	}
	if c.master != "" {
		rc.Host = c.master
	}
	if c.contentType != runtime.ContentTypeProtobuf {
		// Asked for JSON, the client accepts JSON replies only, as
		// kube's clients accept replies of the type they send.
		rc.ContentType, rc.AcceptContentTypes = c.contentType, c.contentType
	}
	return rc, nil
}

func loadSchedulerConfig(path string) (*config.Configuration, error) {
	if path == "" {
		return config.Default(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := config.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return c, nil
}

// clientFor returns a clientset for the kubeconfig given with --kubeconfig,
// rate-limited to qps and burst (a negative qps turns the limit off).
func clientFor(path string, qps float32, burst int) (kubernetes.Interface, error) {
	if path == "" {
		return nil, errors.New("--kubeconfig is required")
	}
	rc, err := kubeconfig.RESTConfig(path, qps, burst)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	return kubernetes.NewForConfig(rc)
}

func newSchedulerCmd(s streams) *cobra.Command {
	o := &schedulerOptions{election: leaderelect.NewOptions(leaderelect.SchedulerLease)}
	cmd := &cobra.Command{
		Use:   "scheduler --kubeconfig FILE [--config PROFILE.yaml] [--kube-api-qps 50] [--kube-api-burst 100] [-v N]",
		Short: "Schedule pods the way kube-scheduler does, explaining every decision",
		Long: `Watch unscheduled pods whose spec.schedulerName is the profile's (default
default-scheduler) and the nodes, place each pod with kube-scheduler's
default filters, scores and weights, and bind it through pods/NAME/binding.
Every decision is kept on the pod: the ` + explain.AnnotationKey + `
annotation, a Scheduled or FailedScheduling event, and the PodScheduled
condition. Read it with: kubegate scheduler explain POD

With --leader-elect (the default, as kube-scheduler's) the scheduler
schedules only while this process holds the Lease kube-system/kube-scheduler:
copies against one API server keep their caches warm and stand by until
the leader stops or its lease expires. A process that loses the lease
exits with status 1; one told to stop (SIGINT, SIGTERM) releases it, so
that a successor takes over at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return &exitError{code: 2, err: err}
			}
			cfg, err := loadSchedulerConfig(o.config)
			if err != nil {
				return err
			}
			rc, err := o.conn.restConfig()
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			// Events go through a client of their own with the same
			// limits, as kube-scheduler's do: they do not slow bindings.
			eventClient, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			factory := scheduler.NewInformerFactory(client)
			profiles, err := cfg.BuildWith(plugins.Args{Spread: scheduler.NewSpreadSources(factory),
				Volumes: scheduler.NewVolumeSources(factory), VolumeClient: client})
			if err != nil {
				return err
			}
			if len(profiles) != 1 {
				return fmt.Errorf("--config %s: %d profiles; one scheduler process runs one profile", o.config, len(profiles))
			}
			logger := slog.New(slog.NewTextHandler(s.err, nil))
			sched, err := scheduler.New(scheduler.Config{Client: client, EventClient: eventClient, Profile: profiles[0], Factory: factory,
				Logger: logger, LogWriter: s.err, Verbosity: o.verbosity})
			if err != nil {
				return err
			}
			return serveUntilSignal(cmd.Context(), nil, func(ctx context.Context) error {
				// The caches fill while standing by, as kube-scheduler's do,
				// so that a new leader schedules at once.
				factory.Start(ctx.Done())
				return leaderelect.Run(ctx, leaderelect.Config{Options: *o.election, Client: rc,
					Component: profiles[0].SchedulerName, Logger: logger}, sched.Run)
			})
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.AddCommand(newSchedulerExplainCmd(s))
	return cmd
}

type explainOptions struct {
	kubeconfig, namespace, nodes, pod, config string
}

func newSchedulerExplainCmd(s streams) *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain POD [-n NS] --kubeconfig FILE | --nodes nodes.yaml --pod pod.json [--config PROFILE.yaml]",
		Short: "Print a node × plugin table of why a pod went where it did",
		Long: `Online: read the explanation kubegate's scheduler left on POD and print it.
Offline: schedule pod.json onto the nodes (and assigned pods, services,
replica sets) in nodes.yaml with the profile, and print every node's filter
verdict and every plugin's raw/normalized/weighted score.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			offline := o.nodes != "" || o.pod != ""
			switch {
			case offline && len(args) > 0:
				return errors.New("give either POD (online) or --nodes and --pod (offline), not both")
			case offline && (o.nodes == "" || o.pod == ""):
				return errors.New("offline explain needs both --nodes and --pod")
			case !offline && len(args) == 0:
				return errors.New("give POD (with --kubeconfig), or --nodes and --pod")
			}
			var e *explain.Explanation
			if offline {
				var err error
				if e, err = explainOffline(o); err != nil {
					return err
				}
			} else {
				client, err := clientFor(o.kubeconfig, 50, 100) // kube-scheduler's client defaults
				if err != nil {
					return err
				}
				if e, err = scheduler.ExplainPod(context.Background(), client, o.namespace, args[0]); err != nil {
					return err
				}
			}
			return explain.Table(s.out, e)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to read the pod with (online)")
	fs.StringVarP(&o.namespace, "namespace", "n", "default", "namespace of POD (online)")
	fs.StringVar(&o.nodes, "nodes", "", "YAML/JSON file of Nodes, plus assigned Pods, Services, ReplicaSets (offline)")
	fs.StringVar(&o.pod, "pod", "", "YAML/JSON file of the Pod to place (offline)")
	fs.StringVar(&o.config, "config", "", "KubeSchedulerConfiguration profile (offline); default the default profile")
	return cmd
}

func explainOffline(o *explainOptions) (*explain.Explanation, error) {
	cfg, err := loadSchedulerConfig(o.config)
	if err != nil {
		return nil, err
	}
	nf, err := os.Open(o.nodes)
	if err != nil {
		return nil, err
	}
	defer nf.Close()
	cluster, err := scheduler.LoadCluster(nf)
	if err != nil {
		return nil, fmt.Errorf("--nodes %s: %w", o.nodes, err)
	}
	pf, err := os.Open(o.pod)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	pod, err := scheduler.LoadPod(pf)
	if err != nil {
		return nil, fmt.Errorf("--pod %s: %w", o.pod, err)
	}
	// Ties go to the first node in file order, so the output is repeatable.
	res, err := scheduler.ScheduleOffline(context.Background(), cluster, pod, cfg, func(int) int { return 1 })
	if res == nil {
		return nil, err
	}
	return explain.FromResult(res, err, -1), nil
}
