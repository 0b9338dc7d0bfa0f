package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/leaderelect"
)

func newControllersCmd(s streams) *cobra.Command {
	var (
		conn                    apiConnection
		rootCAFile              string
		signingCert, signingKey string
		signingDuration         time.Duration
		list                    []string
		verbose                 bool
		saCreds                 bool
		hpa                     controllers.HPASettings
	)
	election := leaderelect.NewOptions(leaderelect.ControllerManagerLease)
	cmd := &cobra.Command{
		Use:   "controllers --kubeconfig FILE [--controllers LIST]",
		Short: "Run kube-controller-manager's controllers for the kinds kubegate serves",
		Long: `Run the controllers that turn workload objects into pods and keep the
cluster in step, against any API server (kubegate's or kube-apiserver),
as kube-controller-manager does: one set of shared informers, every
controller a client of the API only.

Controllers: ` + strings.Join(manager.Names(), ", ") + `.
--controllers takes kube-controller-manager's syntax: "*" is all of them,
NAME turns one on, -NAME turns one off.

With --use-service-account-credentials each controller runs as its own
service account in kube-system (created when missing), which the API
server's default policy binds to the controller's system:controller:
role; the shared informers read as the kubeconfig's identity.

With --cluster-signing-cert-file and --cluster-signing-key-file the
csrsigning controller signs approved certificate signing requests of
kubernetes.io/kube-apiserver-client, kube-apiserver-client-kubelet and
kubelet-serving with that CA; csrapproving approves kubelet client
requests of requesters allowed certificatesigningrequests/nodeclient or
selfnodeclient.

With --leader-elect (the default, as kube-controller-manager's) the
controllers run only while this process holds the Lease
kube-system/kube-controller-manager: copies against one API server stand
by until the leader stops or its lease expires. A process that loses the
lease exits with status 1; one told to stop (SIGINT, SIGTERM) stops its
controllers and releases the lease, so that a successor takes over at
once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			validate := func() error {
				if _, err := manager.Select(list); err != nil {
					return err
				}
				if (signingCert == "") != (signingKey == "") {
					return errors.New("--cluster-signing-cert-file and --cluster-signing-key-file go together")
				}
				if signingDuration <= 0 {
					return fmt.Errorf("--cluster-signing-duration %v: want a positive duration", signingDuration)
				}
				if err := conn.validate(); err != nil {
					return err
				}
				if err := election.Validate(); err != nil {
					return err
				}
				return hpa.Validate()
			}
			return serveUntilSignal(cmd.Context(), validate, func(ctx context.Context) error {
				cfg, err := conn.restConfig()
				if err != nil {
					return err
				}
				var rootCA []byte
				if rootCAFile != "" {
					if rootCA, err = os.ReadFile(rootCAFile); err != nil {
						return fmt.Errorf("--root-ca-file: %w", err)
					}
				}
				level := slog.LevelInfo
				if verbose {
					level = slog.LevelDebug
				}
				logger := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}))
				run := func(ctx context.Context) error {
					return manager.Run(ctx, manager.Options{Config: cfg, Controllers: list, Logger: logger,
						UseServiceAccountCredentials: saCreds, RootCA: rootCA,
						SigningCertFile: signingCert, SigningKeyFile: signingKey, SigningDuration: signingDuration, HPA: hpa})
				}
				return leaderelect.Run(ctx, leaderelect.Config{Options: *election, Client: cfg,
					Component: leaderelect.ControllerManagerLease, Logger: logger}, run)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&rootCAFile, "root-ca-file", "", "the cluster CA bundle published in every namespace as kube-root-ca.crt; default the kubeconfig's CA")
	fs.StringVar(&signingCert, "cluster-signing-cert-file", "",
		"the cluster CA certificate (or a bundle holding it) the CSR signer signs kubernetes.io certificate signing requests with")
	fs.StringVar(&signingKey, "cluster-signing-key-file", "", "the key of --cluster-signing-cert-file")
	fs.DurationVar(&signingDuration, "cluster-signing-duration", csrsigning.DefaultDuration,
		"the longest lifetime of a signed certificate; a request's spec.expirationSeconds may ask for less")
	fs.StringVar(&conn.kubeconfig, "kubeconfig", "", "kubeconfig of the controllers' identity (controller-manager.conf, or admin.conf)")
	fs.StringSliceVar(&list, "controllers", []string{"*"}, "controllers to run: * for all, NAME to add one, -NAME to leave one out")
	fs.Float32Var(&conn.qps, "kube-api-qps", 20, "requests per second to the API server (kube-controller-manager's default)")
	fs.IntVar(&conn.burst, "kube-api-burst", 30, "burst of requests to the API server (kube-controller-manager's default)")
	conn.addFlags(fs)
	election.BindFlags(fs)
	fs.BoolVar(&saCreds, "use-service-account-credentials", false,
		"run each controller as its own service account in kube-system, with tokens from the TokenRequest API")
	fs.BoolVar(&verbose, "verbose", false, "log every change the controllers make")
	addHPAFlags(fs, &hpa)
	return cmd
}

// addHPAFlags registers kube-controller-manager's horizontal pod
// autoscaler flags, with its defaults.
func addHPAFlags(fs *pflag.FlagSet, s *controllers.HPASettings) {
	d := controllers.DefaultHPASettings()
	fs.DurationVar(&s.SyncPeriod, "horizontal-pod-autoscaler-sync-period", d.SyncPeriod, "how often each horizontal pod autoscaler is synced")
	fs.DurationVar(&s.DownscaleStabilization, "horizontal-pod-autoscaler-downscale-stabilization", d.DownscaleStabilization,
		"how far back a scale-down looks for higher recommendations, when the autoscaler's behavior sets no window")
	fs.Float64Var(&s.Tolerance, "horizontal-pod-autoscaler-tolerance", d.Tolerance,
		"how far from 1.0 the ratio of usage to target must be before the autoscaler changes the replicas")
	fs.DurationVar(&s.CPUInitializationPeriod, "horizontal-pod-autoscaler-cpu-initialization-period", d.CPUInitializationPeriod,
		"how long after a pod starts its CPU samples may be skipped")
	fs.DurationVar(&s.InitialReadinessDelay, "horizontal-pod-autoscaler-initial-readiness-delay", d.InitialReadinessDelay,
		"how long after a pod starts a change of its readiness counts as its first")
}
