package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/progress"
	"github.com/kubegate/kubegate/kubeconfig"
)

func newCertCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "Issue, sign, renew and report on certificates",
	}
	cmd.AddCommand(
		newCertIssueCmd(s),
		newCertSignCmd(s),
		newCertRequestCmd(s),
		newCertExpiryCmd(s),
		newCertRenewCmd(s),
		newCertInspectCmd(s),
	)
	return cmd
}

// caNames are the CAs --ca accepts.
var caNames = []string{ca.ClusterCA, ca.FrontProxyCA, ca.EtcdCA}

// loadCA loads DIR/pki/NAME.crt and .key.
func loadCA(dir, name string) (*ca.Authority, error) {
	if !slices.Contains(caNames, name) {
		return nil, fmt.Errorf("--ca %q: want ca, front-proxy-ca or etcd/ca", name)
	}
	base := filepath.Join(dir, ca.PKIDir, filepath.FromSlash(name))
	return ca.LoadAuthority(name, base+".crt", base+".key")
}

// mustNotExist fails, naming the first file, when any of paths exists.
func mustNotExist(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s already exists; use --force to replace it", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

type certIssueOptions struct {
	dir, cn, profile, caName, out, keyAlgorithm, validity, fromFile string
	orgs, sans                                                      []string
	force                                                           bool
	workers                                                         int
}

func newCertIssueCmd(s streams) *cobra.Command {
	o := &certIssueOptions{}
	cmd := &cobra.Command{
		Use:   "issue --dir DIR --cn NAME [--org GROUP]... | --from-file users.csv",
		Short: "Issue a key and certificate for any identity",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runCertIssue(o, s)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree")
	fs.StringVar(&o.cn, "cn", "", "common name (the Kubernetes user name)")
	fs.StringArrayVar(&o.orgs, "org", nil, "organization (a Kubernetes group), repeatable; each its own RDN, in order")
	fs.StringVar(&o.profile, "profile", ca.ProfileClient, "client, server or peer")
	fs.StringSliceVar(&o.sans, "san", nil, "subject alternative name (DNS name or IP), repeatable")
	fs.StringVar(&o.caName, "ca", ca.ClusterCA, "issuing CA: ca, front-proxy-ca or etcd/ca")
	fs.StringVar(&o.out, "out", "", "write PREFIX.crt and PREFIX.key (default DIR/pki/users/CN); with --from-file a directory")
	fs.StringVar(&o.keyAlgorithm, "key-algorithm", string(ca.ECDSAP256), "ecdsa-p256, rsa-2048, rsa-3072 or rsa-4096")
	fs.StringVar(&o.validity, "validity", "", "lifetime, for example 90d (default 365d)")
	fs.StringVar(&o.fromFile, "from-file", "", "CSV of identities: CN,GROUP,GROUP... per line")
	fs.IntVar(&o.workers, "workers", 0, "signing workers for --from-file (default: one per CPU)")
	fs.BoolVar(&o.force, "force", false, "replace existing files")
	return cmd
}

func runCertIssue(o *certIssueOptions, s streams) error {
	if o.dir == "" {
		return errors.New("--dir is required")
	}
	alg, err := ca.ParseKeyAlgorithm(o.keyAlgorithm)
	if err != nil {
		return err
	}
	validity, err := lifetime("validity", o.validity, ca.DefaultValidity, func(m string) { fmt.Fprintln(s.err, m) })
	if err != nil {
		return err
	}
	if o.fromFile != "" {
		if o.cn != "" || len(o.orgs) > 0 {
			return errors.New("--from-file cannot be combined with --cn or --org")
		}
		return runCertIssueFile(o, alg, validity, s)
	}
	if err := ca.ValidateName("--cn", o.cn); err != nil {
		return err
	}
	for _, g := range o.orgs {
		if err := ca.ValidateName("--org", g); err != nil {
			return err
		}
	}
	req := &ca.Request{CN: o.cn, Orgs: o.orgs, Hosts: o.sans, Profile: o.profile, Validity: validity, KeyAlgorithm: alg}
	if err := req.Validate(); err != nil {
		return err
	}
	prefix := o.out
	if prefix == "" {
		prefix = filepath.Join(o.dir, ca.PKIDir, "users", ca.FileStem(o.cn))
	}
	if !o.force {
		if err := mustNotExist(prefix+".crt", prefix+".key"); err != nil {
			return err
		}
	}
	a, err := loadCA(o.dir, o.caName)
	if err != nil {
		return err
	}
	iss, err := a.Issue(req)
	if err != nil {
		return err
	}
	if err := writePair(prefix, iss, o.force); err != nil {
		return err
	}
	fmt.Fprintf(s.err, "wrote %s.crt and %s.key (%s, expires %s)\n", prefix, prefix,
		ca.SubjectString(iss.Cert.RawSubject), iss.Cert.NotAfter.Format(time.DateOnly))
	return nil
}

func runCertIssueFile(o *certIssueOptions, alg ca.KeyAlgorithm, validity time.Duration, s streams) error {
	f, err := os.Open(o.fromFile)
	if err != nil {
		return fmt.Errorf("read users file: %w", err)
	}
	reqs, err := ca.ParseUsers(o.fromFile, f)
	f.Close()
	if err != nil {
		return err
	}
	for i := range reqs {
		reqs[i].Hosts, reqs[i].Profile, reqs[i].Validity, reqs[i].KeyAlgorithm = o.sans, o.profile, validity, alg
		if err := reqs[i].Validate(); err != nil {
			return err
		}
	}
	outDir := o.out
	if outDir == "" {
		outDir = filepath.Join(o.dir, ca.PKIDir, "users")
	}
	prefixes, err := ca.Prefixes(outDir, reqs)
	if err != nil {
		return err
	}
	if !o.force {
		for _, p := range prefixes {
			if err := mustNotExist(p+".crt", p+".key"); err != nil {
				return err
			}
		}
	}
	a, err := loadCA(o.dir, o.caName)
	if err != nil {
		return err
	}
	if err := fsutil.CheckWritableDir(outDir); err != nil {
		return err
	}
	// On a terminal, a counter while the certificates are signed.
	bar := progress.New(s.err)
	count := func(done, total int) { bar.Count("issuing certificates", done, total, "") }
	start := time.Now()
	err = a.IssueFiles(context.Background(), reqs, prefixes, ca.BatchOptions{Workers: o.workers, Overwrite: o.force, Progress: count})
	bar.Done()
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(s.err, "issued %d certificates into %s in %s (%.0f certs/s)\n",
		len(reqs), outDir, took.Round(time.Millisecond), float64(len(reqs))/took.Seconds())
	return nil
}

// writePair writes PREFIX.key and PREFIX.crt in one durable batch: each
// file atomic, both made durable by a single flush.
func writePair(prefix string, iss *ca.Issued, overwrite bool) error {
	return fsutil.WriteFiles([]fsutil.File{
		{Path: prefix + ".key", Data: iss.KeyPEM, Mode: fsutil.ModeKey, Overwrite: overwrite},
		{Path: prefix + ".crt", Data: iss.CertPEM, Mode: fsutil.ModePublic, Overwrite: overwrite},
	})
}

type certSignOptions struct {
	dir, csr, profile, caName, out, validity string
	force                                    bool
}

func newCertSignCmd(s streams) *cobra.Command {
	o := &certSignOptions{}
	cmd := &cobra.Command{
		Use:   "sign --dir DIR --csr FILE",
		Short: "Sign a CSR made elsewhere, keeping its subject byte for byte",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runCertSign(o, s)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree")
	fs.StringVar(&o.csr, "csr", "", "PEM or DER certificate request; - for standard input")
	fs.StringVar(&o.profile, "profile", ca.ProfileClient, "client, server or peer")
	fs.StringVar(&o.caName, "ca", ca.ClusterCA, "issuing CA: ca, front-proxy-ca or etcd/ca")
	fs.StringVar(&o.out, "out", "", "certificate file to write (default: standard output)")
	fs.StringVar(&o.validity, "validity", "", "lifetime, for example 90d (default 365d)")
	fs.BoolVar(&o.force, "force", false, "replace an existing --out file")
	return cmd
}

func runCertSign(o *certSignOptions, s streams) error {
	if o.dir == "" || o.csr == "" {
		return errors.New("--dir and --csr are required")
	}
	if !slices.Contains(ca.Profiles, o.profile) {
		return fmt.Errorf("%w %q (want client, server or peer)", ca.ErrUnknownProfile, o.profile)
	}
	validity, err := lifetime("validity", o.validity, ca.DefaultValidity, func(m string) { fmt.Fprintln(s.err, m) })
	if err != nil {
		return err
	}
	var data []byte
	if o.csr == "-" {
		data, err = io.ReadAll(s.in)
	} else {
		data, err = os.ReadFile(o.csr)
	}
	if err != nil {
		return fmt.Errorf("read CSR: %w", err)
	}
	req, err := ca.ParseCSR(o.csr, data)
	if err != nil {
		return err
	}
	if err := ca.ValidateSubject(req.Subject); err != nil {
		return fmt.Errorf("CSR %s: %w", o.csr, err)
	}
	if o.out != "" && !o.force {
		if err := mustNotExist(o.out); err != nil {
			return err
		}
	}
	a, err := loadCA(o.dir, o.caName)
	if err != nil {
		return err
	}
	iss, err := a.SignCSR(req, o.profile, validity)
	if err != nil {
		return err
	}
	if o.out == "" {
		_, err = s.out.Write(iss.CertPEM)
		return err
	}
	if err := fsutil.WriteFile(o.out, iss.CertPEM, fsutil.ModePublic, o.force); err != nil {
		return err
	}
	fmt.Fprintf(s.err, "wrote %s (%s, expires %s)\n", o.out, ca.SubjectString(iss.Cert.RawSubject), iss.Cert.NotAfter.Format(time.DateOnly))
	return nil
}

// expiryWriters print an expiry report in each --output format.
var expiryWriters = map[string]func(io.Writer, []ca.ExpiryEntry) error{
	"table":      ca.WriteExpiryTable,
	"json":       ca.WriteExpiryJSON,
	"prometheus": ca.WriteExpiryPrometheus,
}

type certExpiryOptions struct {
	dir, output, failWithin string
	now                     func() time.Time
}

func newCertExpiryCmd(s streams) *cobra.Command {
	o := &certExpiryOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "expiry --dir DIR",
		Short: "Report when every CA, leaf and kubeconfig cert expires",
		Long: `Report when every certificate under DIR/pki, and every client certificate
embedded in a DIR/*.conf kubeconfig, expires, as a table, as JSON, or with
-o prometheus in the Prometheus text format that node-exporter's textfile
collector reads: the gauges kubegate_cert_expiry_seconds (negative once
expired) and kubegate_cert_not_after_timestamp_seconds, one series per
certificate labelled path, kubeconfig_user, role and ca.

The collector reads every *.prom file of its directory, so write a
temporary name and rename it, and it never reads half a report:

  kubegate cert expiry --dir /etc/kubernetes -o prometheus \
    > /var/lib/node_exporter/textfile/kubegate.prom.$$ &&
    mv /var/lib/node_exporter/textfile/kubegate.prom.$$ /var/lib/node_exporter/textfile/kubegate.prom

--fail-within exits 1 after writing the report when anything expires
within that time; leave it out of such a job (the && would skip the
rename) and alert on the metrics instead.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runCertExpiry(o, s)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree")
	fs.StringVarP(&o.output, "output", "o", "table", "table, json or prometheus (node-exporter's textfile format)")
	fs.StringVar(&o.failWithin, "fail-within", "", "exit 1 when anything expires within this time, for example 30d")
	return cmd
}

func runCertExpiry(o *certExpiryOptions, s streams) error {
	if o.dir == "" {
		return errors.New("--dir is required")
	}
	write, ok := expiryWriters[o.output]
	if !ok {
		return fmt.Errorf("--output %q: want table, json or prometheus", o.output)
	}
	var within time.Duration
	if o.failWithin != "" {
		d, err := ca.ParseDuration(o.failWithin)
		if err != nil {
			return fmt.Errorf("--fail-within: %w", err)
		}
		within = d
	}
	emb, err := kubeconfig.ScanDir(o.dir)
	if err != nil {
		return err
	}
	found, err := ca.Scan(o.dir, emb)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return fmt.Errorf("no certificates found in %s", filepath.Join(o.dir, ca.PKIDir))
	}
	entries := ca.Expiry(found, o.now())
	if err := write(s.out, entries); err != nil {
		return err
	}
	if within > 0 {
		if soon := ca.ExpiringWithin(entries, within); len(soon) > 0 {
			return &exitError{code: 1, err: fmt.Errorf("%d certificates expire within %s, first %s (%s)",
				len(soon), o.failWithin, soon[0].Name, soon[0].Residual)}
		}
	}
	return nil
}

type certRenewOptions struct {
	dir, validity string
	now           func() time.Time
}

func newCertRenewCmd(s streams) *cobra.Command {
	o := &certRenewOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "renew --dir DIR NAME|all",
		Short: "Re-issue a certificate with the same identity and rewrite kubeconfigs that embed it",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return runCertRenew(o, args[0], s)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree")
	fs.StringVar(&o.validity, "validity", "", "new lifetime, for example 365d (default 365d)")
	return cmd
}

func runCertRenew(o *certRenewOptions, target string, s streams) error {
	if o.dir == "" {
		return errors.New("--dir is required")
	}
	validity, err := lifetime("validity", o.validity, ca.DefaultValidity, func(m string) { fmt.Fprintln(s.err, m) })
	if err != nil {
		return err
	}
	emb, err := kubeconfig.ScanDir(o.dir)
	if err != nil {
		return err
	}
	// On a terminal, a counter naming the certificate being renewed; the
	// lines printed meanwhile go above it.
	bar := progress.New(s.err)
	defer bar.Done()
	status := bar.Writer(s.err)
	renewals, err := ca.PlanRenewProgress(o.dir, target, emb, validity, o.now, func(done, total int, name string) {
		bar.Count("renewing", done, total, name)
	})
	if err != nil {
		return err
	}
	if err := fsutil.CheckWritableDir(o.dir); err != nil {
		return err
	}
	for i, r := range renewals {
		bar.Count("writing", i, len(renewals), r.Name)
		if err := ca.WriteFiles(o.dir, r.Files); err != nil {
			return err
		}
		var confs []string
		for _, k := range r.Kubeconfigs {
			if err := kubeconfig.ReplaceClientCert(filepath.Join(o.dir, k.Kubeconfig), k.User, k.CertPEM, k.KeyPEM); err != nil {
				return err
			}
			confs = append(confs, k.Kubeconfig)
		}
		bar.Count("writing", i+1, len(renewals), "")
		also := ""
		if len(confs) > 0 && len(r.Files) > 0 {
			also = "; rewrote " + strings.Join(confs, ", ")
		}
		fmt.Fprintf(status, "renewed %s (expires %s)%s\n", r.Name, r.NotAfter.Format(time.DateOnly), also)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
