package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/kubeconfig"
)

func newKubeconfigCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Write and explain kubeconfigs",
	}
	cmd.AddCommand(
		newKubeconfigCreateCmd(s),
		newKubeconfigInspectCmd(s),
	)
	return cmd
}

type kubeconfigCreateOptions struct {
	dir, user, server, out, clusterName, contextName, validity, token, kubeconfig string
	orgs                                                                          []string
	merge, force                                                                  bool

	lifetime time.Duration // parsed validity
}

func (o *kubeconfigCreateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree (its CA is DIR/pki/ca.crt and ca.key)")
	fs.StringVar(&o.user, "user", "", "user name: the certificate's CN, and the kubeconfig user entry")
	fs.StringArrayVar(&o.orgs, "org", nil, "group (the certificate's O); repeat for more, kept in order")
	fs.StringVar(&o.server, "server", "", "API server URL, such as https://127.0.0.1:6443")
	fs.StringVar(&o.out, "out", "", `kubeconfig to write (default DIR/USER.conf; "-" prints it)`)
	fs.StringVar(&o.clusterName, "cluster-name", "kubernetes", "cluster entry name")
	fs.StringVar(&o.contextName, "context", "", "context name (default USER@CLUSTER)")
	fs.StringVar(&o.validity, "validity", "", `client certificate lifetime, such as 720h or 30d (default 365d)`)
	fs.StringVar(&o.token, "token", "", `write a token user with this bearer token instead of issuing a certificate ("-" reads it from standard input)`)
	fs.BoolVar(&o.merge, "merge", false, "merge into the kubeconfig kubectl uses (--kubeconfig, else the KUBECONFIG list, else ~/.kube/config), replacing entries with the same names")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "with --merge: the kubeconfig to merge into")
	fs.BoolVar(&o.force, "force", false, "replace an existing --out file")
}

// validate checks every flag before anything is read or written.
func (o *kubeconfigCreateOptions) validate() error {
	switch {
	case o.dir == "":
		return errors.New("--dir is required")
	case o.user == "":
		return errors.New("--user is required")
	case o.server == "":
		return errors.New("--server is required")
	case o.merge && o.out != "":
		return errors.New("--merge and --out cannot be used together: --merge writes the kubeconfig kubectl uses")
	case o.kubeconfig != "" && !o.merge:
		return errors.New("--kubeconfig only applies with --merge")
	case o.token != "" && len(o.orgs) > 0:
		return errors.New("--org applies to certificate users; a token user's groups come from the token authenticator")
	case o.token != "" && o.validity != "":
		return errors.New("--validity applies to certificate users; a token's lifetime is the token's own")
	}
	u, err := url.Parse(o.server)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("--server %q: want an https URL such as https://127.0.0.1:6443", o.server)
	}
	if o.validity != "" {
		if o.lifetime, err = ca.ParseDuration(o.validity); err != nil || o.lifetime <= 0 {
			return fmt.Errorf("--validity %q: want a positive duration such as 720h or 30d", o.validity)
		}
	}
	if err := ca.ValidateName("--user", o.user); err != nil {
		return err
	}
	for _, g := range o.orgs {
		if g == "" {
			return errors.New("--org: a group name is empty")
		}
		if err := ca.ValidateName("--org", g); err != nil {
			return err
		}
	}
	return nil
}

func newKubeconfigCreateCmd(s streams) *cobra.Command {
	o := &kubeconfigCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create --dir DIR --user NAME [--org GROUP]... --server URL [--out FILE | --merge] [--token TOKEN]",
		Short: "Issue a client certificate and write a kubeconfig for it",
		Long: `Issue a client certificate signed by the cluster CA (CN = --user, O = each
--org) and write a kubeconfig that embeds it, its key and the CA. With --token
the kubeconfig carries a bearer token instead and nothing is issued.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return runKubeconfigCreate(o, s)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runKubeconfigCreate(o *kubeconfigCreateOptions, s streams) error {
	if o.token == "-" {
		tok, err := readToken(s.in)
		if err != nil {
			return err
		}
		o.token = tok
	}
	target := o.out
	switch {
	case o.merge:
		target = kubeconfig.DefaultPath(o.kubeconfig)
	case target == "":
		target = filepath.Join(o.dir, ca.FileStem(o.user)+".conf")
	}
	if target != "-" && !o.merge && !o.force {
		if _, err := os.Lstat(target); err == nil {
			return fmt.Errorf("%s already exists; use --force to replace it or --merge to merge into it", target)
		}
	}

	opts := kubeconfig.Options{
		ClusterName: o.clusterName,
		Server:      o.server,
		UserName:    o.user,
		ContextName: o.contextName,
		Token:       o.token,
	}
	summary := "token user " + o.user
	caBase := filepath.Join(o.dir, ca.PKIDir, ca.ClusterCA)
	if o.token != "" {
		caPEM, err := os.ReadFile(caBase + ".crt")
		if err != nil {
			return fmt.Errorf("read cluster CA: %w", err)
		}
		if _, err := ca.ParseCertPEM(caBase+".crt", caPEM); err != nil {
			return err
		}
		opts.CAPEM = caPEM
	} else {
		auth, err := ca.LoadAuthority(ca.ClusterCA, caBase+".crt", caBase+".key")
		if err != nil {
			return err
		}
		issued, err := auth.Issue(&ca.Request{CN: o.user, Orgs: o.orgs, Profile: ca.ProfileClient, Validity: o.lifetime})
		if err != nil {
			return err
		}
		opts.CAPEM, opts.CertPEM, opts.KeyPEM = auth.CertPEM, issued.CertPEM, issued.KeyPEM
		summary = fmt.Sprintf("user %s, groups [%s], certificate expires %s",
			o.user, strings.Join(o.orgs, ", "), issued.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	cfg, err := kubeconfig.Build(opts)
	if err != nil {
		return err
	}

	switch {
	case target == "-":
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			return fmt.Errorf("encode kubeconfig: %w", err)
		}
		_, err = s.out.Write(data)
		return err
	case o.merge:
		res, err := kubeconfig.Merge(target, cfg)
		if err != nil {
			return err
		}
		verb := "merged into"
		if res.Created {
			verb = "created"
		}
		fmt.Fprintf(s.err, "%s %s (%s)", verb, target, summary)
		if len(res.Replaced) > 0 {
			fmt.Fprintf(s.err, "; replaced %s", strings.Join(res.Replaced, ", "))
		}
		if res.CurrentContext != cfg.CurrentContext {
			fmt.Fprintf(s.err, "; next: kubectl config use-context %s\n", cfg.CurrentContext)
		} else {
			fmt.Fprintf(s.err, "; next: kubectl get --raw /version\n")
		}
		return nil
	}
	if err := kubeconfig.Write(target, cfg, o.force); err != nil {
		if errors.Is(err, fsutil.ErrExists) {
			return fmt.Errorf("%s already exists; use --force to replace it or --merge to merge into it", target)
		}
		return err
	}
	fmt.Fprintf(s.err, "wrote %s (%s); next: kubectl --kubeconfig %s get --raw /version\n", target, summary, target)
	return nil
}

// readToken reads one token line from r.
func readToken(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 64<<10)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("--token -: read standard input: %w", err)
	}
	tok := strings.TrimSpace(line)
	if tok == "" {
		return "", errors.New("--token -: standard input holds no token")
	}
	return tok, nil
}
