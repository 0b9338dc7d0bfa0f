package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/ca"
)

// defaultSAIssuer is kubeadm's --service-account-issuer, which the gateway
// and the apiserver also default to.
const defaultSAIssuer = "https://kubernetes.default.svc.cluster.local"

func newTokenCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Sign service-account tokens and create bootstrap tokens",
	}
	cmd.AddCommand(newTokenCreateCmd(s))
	return cmd
}

type tokenCreateOptions struct {
	dir, namespace, name, issuer, uid string
	audiences                         []string
	duration                          time.Duration
	now                               func() time.Time

	// bootstrap makes a bootstrap token in a running API server instead.
	bootstrap bootstrapTokenOptions
	// changed reports whether a flag was set on the command line.
	changed func(flag string) bool
}

func (o *tokenCreateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree (the signing key is DIR/pki/sa.key)")
	fs.StringVarP(&o.namespace, "namespace", "n", "default", "namespace of the service account")
	fs.StringVar(&o.name, "service-account", "", "service account name")
	fs.StringArrayVar(&o.audiences, "audience", nil, "audience of the token; repeat for more (default: the issuer)")
	fs.DurationVar(&o.duration, "duration", time.Hour, "lifetime of the token (at least 10m, as the TokenRequest API requires)")
	fs.StringVar(&o.issuer, "issuer", defaultSAIssuer, "iss claim; must be one of the --service-account-issuer values of the server that verifies it")
	fs.StringVar(&o.uid, "uid", "", "UID of the service account, which servers that look the account up compare (default: a new random UID)")
	o.bootstrap.AddFlags(fs)
}

func (o *tokenCreateOptions) validate() error {
	if o.bootstrap.enabled {
		for _, f := range []string{"dir", "namespace", "service-account", "audience", "duration", "issuer", "uid"} {
			if o.changed(f) {
				return fmt.Errorf("--%s: not used with --bootstrap", f)
			}
		}
		return o.bootstrap.validate()
	}
	for _, f := range bootstrapOnlyFlags {
		if o.changed(f) {
			return fmt.Errorf("--%s: only used with --bootstrap", f)
		}
	}
	switch {
	case o.dir == "":
		return errors.New("--dir is required")
	case o.name == "":
		return errors.New("--service-account is required")
	case o.issuer == "":
		return errors.New("--issuer is empty")
	case o.duration%time.Second != 0:
		return fmt.Errorf("--duration %s: want whole seconds", o.duration)
	}
	if _, _, err := serviceaccount.SplitUsername(serviceaccount.Username(o.namespace, o.name)); err != nil {
		return fmt.Errorf("--namespace %q --service-account %q: %w", o.namespace, o.name, err)
	}
	for _, a := range o.audiences {
		if a == "" {
			return errors.New("--audience: an audience is empty")
		}
	}
	return nil
}

func newTokenCreateCmd(s streams) *cobra.Command {
	o := &tokenCreateOptions{}
	cmd := &cobra.Command{
		Use: "create --dir DIR --namespace NS --service-account NAME [--audience A]... [--duration 1h]\n" +
			"  kubegate token create --bootstrap --kubeconfig FILE [--ttl 24h] [--groups G]... [--usages U]... [--description TEXT]",
		Short: "Print a bound service-account token signed with DIR/pki/sa.key, or create a bootstrap token",
		Long: `Print a service-account JWT with the claims kube-apiserver's TokenRequest API
gives a bound token (iss, sub, aud, iat, nbf, exp, jti and kubernetes.io),
signed with DIR/pki/sa.key. The default issuer and audience are
` + defaultSAIssuer + `, as in kubeadm.

With --bootstrap, create a bootstrap token the way kubeadm token create does:
a random token ID.SECRET, stored as the Secret bootstrap-token-ID in
kube-system of the API server --kubeconfig names, and printed on stdout.
An API server with --enable-bootstrap-token-auth (kubegate up turns it on)
accepts it as the user system:bootstrap:ID in the group system:bootstrappers
and the --groups.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if o.bootstrap.enabled {
				return runBootstrapTokenCreate(cmd.Context(), &o.bootstrap, s)
			}
			return runTokenCreate(o, s)
		},
	}
	o.AddFlags(cmd.Flags())
	o.changed = func(flag string) bool { return cmd.Flags().Changed(flag) }
	return cmd
}

func runTokenCreate(o *tokenCreateOptions, s streams) error {
	keyPath := filepath.Join(o.dir, ca.PKIDir, "sa.key")
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("read service-account signing key: %w", err)
	}
	key, err := serviceaccount.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", keyPath, err)
	}
	issuer, err := serviceaccount.NewIssuer(key, serviceaccount.IssuerOptions{Issuer: o.issuer, Now: o.now})
	if err != nil {
		return err
	}
	uid := o.uid
	if uid == "" {
		uid = uuid.NewString()
	}
	tok, err := issuer.Issue(serviceaccount.TokenRequest{
		Namespace:         o.namespace,
		Name:              o.name,
		UID:               uid,
		Audiences:         o.audiences,
		ExpirationSeconds: int64(o.duration / time.Second),
	})
	var fe *serviceaccount.FieldError
	if errors.As(err, &fe) && fe.Field == "spec.expirationSeconds" {
		return fmt.Errorf("--duration %s: %w", o.duration, err)
	} else if err != nil {
		return err
	}
	for _, w := range tok.Warnings {
		fmt.Fprintf(s.err, "warning: %s\n", w)
	}
	_, err = fmt.Fprintln(s.out, tok.Token)
	return err
}
