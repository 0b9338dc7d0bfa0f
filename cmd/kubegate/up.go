package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/internal/progress"
	"github.com/kubegate/kubegate/nodesim/metrics"
	"github.com/kubegate/kubegate/up"
)

// upOptions are `kubegate up`'s flags.
type upOptions struct {
	up.Options
	verbose bool
}

// AddFlags registers the flags.
func (o *upOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Dir, "dir", o.Dir, "cluster directory: PKI, kubeconfigs, tokens.csv and the store (state.db)")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address the API (gateway) listens on")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "port the API (gateway) serves HTTPS on")
	fs.StringVar(&o.APIServerAddress, "apiserver-address", "127.0.0.1:0", "HOST:PORT the API server behind the gateway listens on (port 0: a free one)")
	addTLSFlags(fs, &o.TLS)
	fs.IntVar(&o.Nodes, "nodes", up.DefaultNodes, "number of simulated nodes, with the scheduler (0: neither); 3 is the fewest on which spreading, anti-affinity and a rolling update across nodes show and a Deployment of 3 replicas puts one pod on each node")
	addPodRunTimeFlag(fs, &o.PodRunTime)
	fs.IntVar(&o.UsagePercent, "usage-percent", metrics.DefaultUsagePercent, "what the simulated pods' containers use, as a percentage of their requests, unless a pod's nodesim.kubegate.io/cpu-usage or memory-usage annotation says otherwise (metrics.k8s.io, kubectl top)")
	fs.BoolVar(&o.NodeBootstrap, "node-bootstrap", false, "the simulated nodes start from a bootstrap token (DIR/"+up.BootstrapKubeconfig+", new each run), get their client certificates through the CSR API and renew them, as kubelets joining with kubeadm do")
	fs.DurationVar(&o.SigningDuration, "cluster-signing-duration", csrsigning.DefaultDuration, "the longest lifetime the CSR signer gives a certificate, as kube-controller-manager's flag")
	addHPAFlags(fs, &o.HPA)
	fs.StringSliceVar(&o.Controllers, "controllers", nil, "controllers to run, as kube-controller-manager's flag: \"*\" all (the default), \"NAME\" one more, \"-NAME\" one less")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", nil, "etcd client URLs, instead of DIR/state.db (mTLS with DIR/pki/apiserver-etcd-client)")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", apiserver.DefaultRequestTimeout, "the API server's deadline of every request but watches, proxies, exec, attach, port-forward and logs; past it the answer is 504 (0: none)")
	fs.StringVar(&o.ServiceCIDR, "service-cidr", "10.96.0.0/12", "service CIDR: Services' cluster IPs, and pki init's apiserver SAN (its first IP)")
	fs.StringVar(&o.AuditLogPath, "audit-log-path", "", "the gateway writes one JSON line per request here (- for standard output): user, groups, authenticator, credential ID and, for client certificates, the serial")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", false, "true: requests without credentials are system:anonymous on every path, RBAC decides (kube-apiserver's meaning); false: nowhere; not given: only on /healthz, /livez, /readyz, /version and their sub-paths")
	track(fs, "anonymous-auth", &o.AnonymousAuthSet)
	fs.StringVar(&o.AuthenticationConfigFile, "authentication-config", "", "AuthenticationConfiguration file (apiserver.config.k8s.io/v1) for the gateway and the API server: JWT issuers, anonymous paths; reloaded when it changes")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "log informational messages too")
}

func newUpCmd(s streams) *cobra.Command {
	o := &upOptions{Options: up.Options{Dir: "kubegate", BindAddress: "127.0.0.1", SecurePort: 6443}}
	cmd := &cobra.Command{
		Use:   "up [--dir DIR] [--secure-port 6443]",
		Short: "Run a local cluster: PKI, API server, gateway, controllers, scheduler and simulated nodes in one process",
		Long: `Run a local cluster in one process. The first time, write the cluster PKI and
kubeconfigs into DIR (as kubegate pki init does). Then serve the API server on a
loopback port (--apiserver-address), over DIR/state.db, behind the gateway on
--secure-port, which DIR/admin.conf points at, with the controllers, the
scheduler and --nodes simulated nodes. Ctrl-C stops everything; the next run
keeps all state.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// On a terminal, a spinner naming the step of the start, with
			// what is printed meanwhile above it; erased once up.
			spinner := progress.New(s.err)
			defer spinner.Done()
			o.Progress = func(step string) {
				if step == "" {
					spinner.Done()
					return
				}
				spinner.Spin(step)
			}
			s := streams{in: s.in, out: s.out, err: spinner.Writer(s.err)}
			o.Logger = s.logger(o.verbose)
			o.Status = s.err
			o.InitPKI = func(dir, server string) error { return initPKIForUp(dir, server, o.ServiceCIDR, s) }
			return serveUntilSignal(cmd.Context(), o.Validate, func(ctx context.Context) error { return up.Run(ctx, o.Options) })
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// initPKIForUp runs `kubegate pki init --dir dir --server server
// --service-cidr serviceCIDR` with every other flag at its default.
func initPKIForUp(dir, server, serviceCIDR string, s streams) error {
	o := &pkiOptions{}
	fs := pflag.NewFlagSet("pki init", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--dir", dir, "--server", server, "--service-cidr", serviceCIDR}); err != nil {
		return err
	}
	return runPKIInit(o, s)
}
