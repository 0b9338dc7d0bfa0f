package main

import (
	"bufio"
	"encoding/base64"
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
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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
	dir, user, server, out, clusterName, contextName, validity, token, kubeconfig, caFile string
	orgs                                                                                  []string
	merge, force                                                                          bool

	// An OIDC user: the kubeconfig runs a credential plugin that logs in
	// at the issuer.
	oidcIssuer, oidcClientID, oidcClientSecret, oidcCAFile, execPlugin string
	oidcExtraScopes                                                    []string

	lifetime time.Duration // parsed validity
}

// defaultOIDCUser names the kubeconfig user entry of an OIDC user when
// --user is not given, as kubelogin's setup guide names it.
const defaultOIDCUser = "oidc"

func (o *kubeconfigCreateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree (its CA is DIR/pki/ca.crt and ca.key); token and OIDC users may give --ca instead")
	fs.StringVar(&o.user, "user", "", `user name: the certificate's CN, and the kubeconfig user entry (default "oidc" with --oidc-issuer)`)
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
	fs.StringVar(&o.caFile, "ca", "", "CA certificate (PEM) the server's certificate is checked against, embedded in the kubeconfig (default DIR/pki/ca.crt)")
	fs.StringVar(&o.oidcIssuer, "oidc-issuer", "", "write an OIDC user: the OpenID provider's issuer URL (https), where the credential plugin logs in")
	fs.StringVar(&o.oidcClientID, "oidc-client-id", "", "with --oidc-issuer: the OAuth client ID, the audience of the ID tokens")
	fs.StringVar(&o.oidcClientSecret, "oidc-client-secret", "", "with --oidc-issuer: the OAuth client secret, if the client has one")
	fs.StringArrayVar(&o.oidcExtraScopes, "oidc-extra-scope", nil, "with --oidc-issuer: a scope to ask for besides openid, such as email or groups; repeat for more")
	fs.StringVar(&o.oidcCAFile, "oidc-ca", "", "with --oidc-issuer: CA certificate (PEM) the provider's certificate is checked against, embedded in the plugin's arguments")
	fs.StringVar(&o.execPlugin, "exec-plugin", "", `with --oidc-issuer: the credential plugin command; "kubectl" (the default) runs kubectl oidc-login get-token, any other command (kubectl-oidc_login, a path) runs as COMMAND get-token`)
}

// oidc reports whether o writes an OIDC user.
func (o *kubeconfigCreateOptions) oidc() bool { return o.oidcIssuer != "" }

// validate checks every flag before anything is read or written.
func (o *kubeconfigCreateOptions) validate() error {
	if err := o.validateOIDC(); err != nil {
		return err
	}
	switch {
	case o.dir == "" && o.caFile == "":
		return errors.New("--dir is required (token and OIDC users may give --ca instead)")
	case o.dir == "" && o.token == "" && !o.oidc():
		return errors.New("--dir is required: a certificate user's certificate is signed by DIR/pki/ca.key")
	case o.dir == "" && o.out == "" && !o.merge:
		return errors.New("--out or --merge is required without --dir")
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

// validateOIDC checks the OIDC flags: they come together with
// --oidc-issuer, and rule out the flags of other kinds of user. A missing
// --user becomes "oidc".
func (o *kubeconfigCreateOptions) validateOIDC() error {
	if !o.oidc() {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"--oidc-client-id", o.oidcClientID != ""},
			{"--oidc-client-secret", o.oidcClientSecret != ""},
			{"--oidc-extra-scope", len(o.oidcExtraScopes) > 0},
			{"--oidc-ca", o.oidcCAFile != ""},
			{"--exec-plugin", o.execPlugin != ""},
		} {
			if f.set {
				return fmt.Errorf("%s applies only with --oidc-issuer", f.name)
			}
		}
		return nil
	}
	switch {
	case o.token != "":
		return errors.New("--token and --oidc-issuer cannot be used together: an OIDC user gets its tokens from the provider")
	case len(o.orgs) > 0:
		return errors.New("--org applies to certificate users; an OIDC user's groups come from its ID token's claims")
	case o.validity != "":
		return errors.New("--validity applies to certificate users; an OIDC user's tokens are as long-lived as the provider makes them")
	case o.oidcClientID == "":
		return errors.New("--oidc-client-id is required with --oidc-issuer")
	}
	u, err := url.Parse(o.oidcIssuer)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("--oidc-issuer %q: want an https URL without query or fragment, such as https://issuer.example.com", o.oidcIssuer)
	}
	if o.user == "" {
		o.user = defaultOIDCUser
	}
	if o.execPlugin == "" {
		o.execPlugin = "kubectl"
	}
	checks := []struct{ flag, value string }{
		{"--oidc-client-id", o.oidcClientID},
		{"--exec-plugin", o.execPlugin},
	}
	if o.oidcClientSecret != "" {
		// Named without its value: the secret must not reach the terminal.
		if strings.ContainsFunc(o.oidcClientSecret, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return errors.New("--oidc-client-secret: contains a control character")
		}
	}
	for _, sc := range o.oidcExtraScopes {
		if sc == "" || strings.ContainsAny(sc, " \t\n") {
			return fmt.Errorf("--oidc-extra-scope %q: want one scope name, such as email or groups", sc)
		}
		checks = append(checks, struct{ flag, value string }{"--oidc-extra-scope", sc})
	}
	for _, c := range checks {
		if err := ca.ValidateName(c.flag, c.value); err != nil {
			return err
		}
	}
	return nil
}

// execConfig is the credential plugin stanza of an OIDC user, in the
// shape kubelogin's setup guide gives: client.authentication.k8s.io/v1,
// the plugin's get-token with the issuer and client as flags, and
// interactive only when kubectl runs on a terminal.
func (o *kubeconfigCreateOptions) execConfig(oidcCAPEM []byte) *clientcmdapi.ExecConfig {
	var args []string
	if o.execPlugin == "kubectl" {
		args = append(args, "oidc-login")
	}
	args = append(args, "get-token",
		"--oidc-issuer-url="+o.oidcIssuer,
		"--oidc-client-id="+o.oidcClientID)
	if o.oidcClientSecret != "" {
		args = append(args, "--oidc-client-secret="+o.oidcClientSecret)
	}
	for _, sc := range o.oidcExtraScopes {
		args = append(args, "--oidc-extra-scope="+sc)
	}
	if oidcCAPEM != nil {
		args = append(args, "--certificate-authority-data="+base64.StdEncoding.EncodeToString(oidcCAPEM))
	}
	return &clientcmdapi.ExecConfig{
		APIVersion:      "client.authentication.k8s.io/v1",
		Command:         o.execPlugin,
		Args:            args,
		InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode,
	}
}

// readCA reads and checks a PEM CA certificate named by flag.
func readCA(flag, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if _, err := ca.ParseCertPEM(path, data); err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return data, nil
}

func newKubeconfigCreateCmd(s streams) *cobra.Command {
	o := &kubeconfigCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create --dir DIR --user NAME [--org GROUP]... --server URL [--out FILE | --merge] [--token TOKEN | --oidc-issuer URL --oidc-client-id ID]",
		Short: "Issue a client certificate and write a kubeconfig for it",
		Long: `Issue a client certificate signed by the cluster CA (CN = --user, O = each
--org) and write a kubeconfig that embeds it, its key and the CA. With --token
the kubeconfig carries a bearer token instead and nothing is issued.

With --oidc-issuer and --oidc-client-id the user logs in at an OpenID
provider: the kubeconfig runs a client-go credential plugin, kubelogin
(kubectl oidc-login get-token) unless --exec-plugin names another, which
hands kubectl the ID token. Token and OIDC users may name the server's CA
with --ca instead of --dir.`,
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
	var oidcCAPEM []byte
	if o.oidc() {
		summary = fmt.Sprintf("OIDC user %s, logging in at %s with %s", o.user, o.oidcIssuer, o.pluginCommand())
		if o.oidcCAFile != "" {
			var err error
			if oidcCAPEM, err = readCA("--oidc-ca", o.oidcCAFile); err != nil {
				return err
			}
		}
	}
	var caOverride []byte
	if o.caFile != "" {
		var err error
		if caOverride, err = readCA("--ca", o.caFile); err != nil {
			return err
		}
	}
	caBase := filepath.Join(o.dir, ca.PKIDir, ca.ClusterCA)
	if o.token != "" || o.oidc() {
		caPEM := caOverride
		if caPEM == nil {
			var err error
			caPEM, err = os.ReadFile(caBase + ".crt")
			if err != nil {
				return fmt.Errorf("read cluster CA: %w", err)
			}
			if _, err := ca.ParseCertPEM(caBase+".crt", caPEM); err != nil {
				return err
			}
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
		// The whole file: during a CA rotation it holds both CAs (H.6).
		bundle, err := os.ReadFile(caBase + ".crt")
		if err != nil {
			return fmt.Errorf("read cluster CA: %w", err)
		}
		opts.CAPEM, opts.CertPEM, opts.KeyPEM = bundle, issued.CertPEM, issued.KeyPEM
		if caOverride != nil {
			opts.CAPEM = caOverride
		}
		summary = fmt.Sprintf("user %s, groups [%s], certificate expires %s",
			o.user, strings.Join(o.orgs, ", "), issued.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	cfg, err := kubeconfig.Build(opts)
	if err != nil {
		return err
	}
	if o.oidc() {
		cfg.AuthInfos[o.user].Exec = o.execConfig(oidcCAPEM)
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

// pluginCommand is the command line the credential plugin starts with.
func (o *kubeconfigCreateOptions) pluginCommand() string {
	if o.execPlugin == "kubectl" {
		return "kubectl oidc-login"
	}
	return o.execPlugin
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
