package main

import (
	"context"
	"fmt"
	"github.com/kubegate/kubegate/apiserver/server"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// apiserverOptions are `kubegate apiserver`'s flags.
type apiserverOptions struct {
	server.Options
	verbose bool
}

// AddFlags registers the flags, named as kube-apiserver names them.
func (o *apiserverOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address to listen on")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "port to serve HTTPS on (0: any free port)")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serving certificate (reloaded on change)")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", "", "serving key (reloaded on change)")
	addTLSFlags(fs, &o.TLS)
	addAuthnFlags(fs, &o.Flags,
		"PEM public keys (or certs, or private keys) that verify service-account tokens; repeatable (default: the signing key)",
		"check that a legacy token's service account and secret still exist (bound tokens are always checked)")
	fs.StringVar(&o.ProxyClientCertFile, "proxy-client-cert-file", "", "client certificate the API server presents to aggregated API servers (front-proxy-client.crt)")
	fs.StringVar(&o.ProxyClientKeyFile, "proxy-client-key-file", "", "private key of --proxy-client-cert-file")
	fs.StringVar(&o.SASigningKeyFile, "service-account-signing-key-file", "", "private key (sa.key) that signs TokenRequest tokens")
	fs.DurationVar(&o.SAMaxTokenExpiration, "service-account-max-token-expiration", 0, "longest TokenRequest lifetime; longer requests are shortened (0: no cap)")
	fs.StringVar(&o.AuthorizationMode, "authorization-mode", o.AuthorizationMode, "RBAC, or AlwaysAllow (tests only: every authenticated request is allowed)")
	fs.StringVar(&o.DataDir, "data-dir", "", "directory of the embedded store (DIR/state.db)")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", nil, "etcd client URLs, instead of --data-dir")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", "", "CA that verifies the etcd servers")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", "", "client certificate for etcd")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", "", "key of --etcd-certfile")
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", "", "prefix of every etcd key, to share one etcd between servers")
	fs.DurationVar(&o.EtcdCompactionInterval, "etcd-compaction-interval", o.EtcdCompactionInterval, "how often etcd's history is compacted (0: never)")
	fs.DurationVar(&o.EtcdHealthcheckTimeout, "etcd-healthcheck-timeout", o.EtcdHealthcheckTimeout, "timeout of the store check of /healthz and /livez")
	fs.DurationVar(&o.EtcdReadycheckTimeout, "etcd-readycheck-timeout", o.EtcdReadycheckTimeout, "timeout of the store check of /readyz")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "deadline of every request but watches, proxies, exec, attach, port-forward and logs; past it the answer is 504 (0: none)")
	fs.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", "10.96.0.0/12", "CIDR Services' cluster IPs come from; its first IP is the kubernetes Service's")
	fs.StringVar(&o.ServiceNodePortRange, "service-node-port-range", "30000-32767", "ports NodePort and LoadBalancer Services' node ports come from")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", "", "IP the kubernetes Service's endpoints list for this server (default: --bind-address if it is a specific non-loopback address, else the host's default-route address)")
	fs.StringVar(&o.EndpointReconcilerType, "endpoint-reconciler-type", o.EndpointReconcilerType, "keep the kubernetes Service's endpoints: lease (every API server on the store, by leases) or none")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "log informational messages too")
}

func newAPIServerCmd(s streams) *cobra.Command {
	o := &apiserverOptions{Options: server.Defaults()}
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Serve a Kubernetes-compatible API over an embedded store or etcd",
		Long: `Serve the Kubernetes API (discovery, OpenAPI, core, RBAC, events, leases and the
authentication and authorization review APIs) over a bbolt file (--data-dir) or
etcd (--etcd-servers), authenticating requests as kube-apiserver does and
authorizing them with RBAC and its default policy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveUntilSignal(cmd.Context(), o.Validate, func(ctx context.Context) error { return runAPIServer(ctx, o, s) })
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runAPIServer(ctx context.Context, o *apiserverOptions, s streams) error {
	logger := s.logger(o.verbose)
	srv, err := server.New(ctx, o.Options, logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.err, "kubegate apiserver serving on %s, authorization %s\n", srv.URL(), o.AuthorizationMode)
	return srv.Serve(ctx)
}
