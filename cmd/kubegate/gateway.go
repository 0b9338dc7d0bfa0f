package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubegate/kubegate/gateway"
)

// gatewayOptions are `kubegate gateway`'s flags.
type gatewayOptions struct {
	gateway.Options
	identity string
	verbose  bool
}

// AddFlags registers the flags, named as kube-apiserver names them.
func (o *gatewayOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address to listen on")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "port to serve HTTPS on")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serving certificate (reloaded on change)")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", "", "serving key (reloaded on change)")
	addTLSFlags(fs, &o.TLS)
	fs.StringSliceVar(&o.TLSCurves, "tls-curve-preferences", nil, "key-exchange groups offered, in order (X25519, X25519MLKEM768, P256, P384, P521); default Go's")
	addAuthnFlags(fs, &o.Flags,
		"PEM public keys (or certs, or private keys) that verify service-account tokens; repeatable",
		"check through the upstream that a token's service account (and pod, secret) still exist")
	fs.StringSliceVar(&o.Upstreams, "upstream", nil, "API server to forward to, e.g. https://127.0.0.1:6444; repeat it or give a comma-separated list for several API servers sharing one store, all with the same scheme and path, the same --upstream-ca-file and client certificate: each request goes to the next healthy one")
	fs.DurationVar(&o.HealthCheck.Interval, "upstream-health-check-interval", o.HealthCheck.Interval, "with several --upstream, how often each one's /readyz is checked")
	fs.DurationVar(&o.HealthCheck.Timeout, "upstream-health-check-timeout", o.HealthCheck.Timeout, "with several --upstream, how long a /readyz check may take")
	fs.IntVar(&o.HealthCheck.Fall, "upstream-health-check-fall", o.HealthCheck.Fall, "with several --upstream, failed checks in a row that take an upstream out of rotation (a refused or broken connection takes it out at once)")
	fs.IntVar(&o.HealthCheck.Rise, "upstream-health-check-rise", o.HealthCheck.Rise, "with several --upstream, passed checks in a row that bring an upstream back")
	fs.StringVar(&o.UpstreamCAFile, "upstream-ca-file", "", "CA that verifies the upstream's serving certificate")
	fs.StringVar(&o.ProxyCertFile, "proxy-client-cert-file", "", "the gateway's client certificate to the upstream (front-proxy-client)")
	fs.StringVar(&o.ProxyKeyFile, "proxy-client-key-file", "", "key of --proxy-client-cert-file")
	fs.BoolVar(&o.HTTP1FastPath, "http1-fast-path", o.HTTP1FastPath, "serve plain HTTP/1.1 requests without net/http's server and reverse proxy, under the same request policy; needs an --upstream without a path")
	fs.BoolVar(&o.HTTP2FastPath, "http2-fast-path", o.HTTP2FastPath, "opt-in: serve HTTP/2 connections with the fast path's own HTTP/2 server (x/net's framer, each stream's answer written by its own goroutine) instead of Go's, under the same request policy; it costs less CPU per request but does not get Go's HTTP/2 fixes; needs --http1-fast-path")
	fs.StringVar(&o.identity, "upstream-identity", string(o.UpstreamIdentity), "how the identity is forwarded: requestheader (X-Remote-*) or impersonate (Impersonate-*)")
	fs.StringVar(&o.RevokedCertsFile, "revoked-certs", "", "refused client certificates: a CRL, or hex serials and sha256:<fingerprint> lines (reloaded on change)")
	fs.StringVar(&o.AuditLogPath, "audit-log-path", "", "write one JSON line per request here (- for standard output)")
	fs.Int64Var(&o.MaxBodyBytes, "max-request-body-bytes", o.MaxBodyBytes, "largest request body accepted, except for streams")
	fs.BoolVar(&o.Console, "console", o.Console, "serve the web console at /kubegate/ui/: its files to anyone, its data to authenticated users as RBAC allows")
	fs.StringVar(&o.ConsolePKIDir, "console-pki-dir", "", "cluster directory in kubeadm's layout (DIR/pki, DIR/*.conf) that the console's PKI view shows; default none")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "log every refused request")
}

func newGatewayCmd(s streams) *cobra.Command {
	o := &gatewayOptions{Options: gateway.Defaults()}
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Authenticate requests as kube-apiserver does and forward them to an upstream API server",
		Long: `Serve HTTPS, authenticate each request with x509 client certificates, static
tokens, service-account tokens or a front proxy's headers, exactly as kube-apiserver
does, and forward it with the verified identity to --upstream.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.UpstreamIdentity = gateway.UpstreamIdentity(o.identity)
			return serveUntilSignal(cmd.Context(), o.Validate, func(ctx context.Context) error { return runGateway(ctx, o, s) })
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runGateway(ctx context.Context, o *gatewayOptions, s streams) error {
	logger := s.logger(o.verbose)
	srv, err := gateway.NewServer(ctx, o.Options, logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.err, "kubegate gateway serving on https://%s, forwarding to %s as %s\n", srv.Listener.Addr(), strings.Join(o.Upstreams, ", "), o.UpstreamIdentity)
	return srv.Serve(ctx)
}
