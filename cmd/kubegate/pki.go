package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/kubeconfig"
)

func newPKICmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pki",
		Short: "Build and lint a cluster PKI (kubeadm layout)",
	}
	cmd.AddCommand(newPKIInitCmd(s), newPKIPlanCmd(s), newPKICheckCmd(s))
	return cmd
}

// clusterFile is the --config file: the same settings as the flags.
type clusterFile struct {
	ClusterName   string   `json:"clusterName,omitempty"`
	Server        string   `json:"server,omitempty"`
	ClusterDomain string   `json:"clusterDomain,omitempty"`
	ServiceCIDR   string   `json:"serviceCIDR,omitempty"`
	APIServerSANs []string `json:"apiServerSANs,omitempty"`
	Nodes         []string `json:"nodes,omitempty"`
	KeyAlgorithm  string   `json:"keyAlgorithm,omitempty"`
	Validity      string   `json:"validity,omitempty"`
	CAValidity    string   `json:"caValidity,omitempty"`
}

// pkiOptions are the flags shared by pki init and pki plan.
type pkiOptions struct {
	dir, config string
	file        clusterFile
	force       bool
	flags       *pflag.FlagSet
}

func (o *pkiOptions) AddFlags(fs *pflag.FlagSet) {
	o.flags = fs
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree (DIR/pki, DIR/*.conf)")
	fs.StringVar(&o.config, "config", "", "cluster spec file (YAML); flags given explicitly override it")
	fs.StringVar(&o.file.ClusterName, "cluster-name", "kubernetes", "cluster name in kubeconfigs")
	fs.StringVar(&o.file.Server, "server", "https://127.0.0.1:6443", "API server URL in kubeconfigs")
	fs.StringVar(&o.file.ClusterDomain, "cluster-domain", "cluster.local", "cluster DNS domain")
	fs.StringVar(&o.file.ServiceCIDR, "service-cidr", "10.96.0.0/12", "service CIDR; its first IP is an apiserver SAN")
	fs.StringSliceVar(&o.file.APIServerSANs, "apiserver-san", nil, "extra apiserver SAN (DNS name or IP), repeatable")
	fs.StringSliceVar(&o.file.Nodes, "node", nil, "node name; writes kubelet-NAME.conf, repeatable")
	fs.StringVar(&o.file.KeyAlgorithm, "key-algorithm", string(ca.ECDSAP256), "ecdsa-p256, rsa-2048, rsa-3072 or rsa-4096")
	fs.StringVar(&o.file.Validity, "validity", "", "leaf lifetime, for example 365d (default 365d)")
	fs.StringVar(&o.file.CAValidity, "ca-validity", "", "CA lifetime, for example 3650d (default 3650d)")
	fs.BoolVar(&o.force, "force", false, "replace existing keys, certificates and kubeconfigs")
}

// resolve merges the config file under explicitly set flags and returns a
// validated spec, with warnings for lifetimes above the defaults.
func (o *pkiOptions) resolve(warn func(string)) (ca.Spec, error) {
	if o.dir == "" {
		return ca.Spec{}, errors.New("--dir is required")
	}
	f := o.file
	if o.config != "" {
		data, err := os.ReadFile(o.config)
		if err != nil {
			return ca.Spec{}, fmt.Errorf("read cluster spec: %w", err)
		}
		var fromFile clusterFile
		if err := yaml.UnmarshalStrict(data, &fromFile); err != nil {
			return ca.Spec{}, fmt.Errorf("cluster spec %s: %w", o.config, err)
		}
		merge := func(flag string, dst *string, v string) {
			if v != "" && !o.flags.Changed(flag) {
				*dst = v
			}
		}
		merge("cluster-name", &f.ClusterName, fromFile.ClusterName)
		merge("server", &f.Server, fromFile.Server)
		merge("cluster-domain", &f.ClusterDomain, fromFile.ClusterDomain)
		merge("service-cidr", &f.ServiceCIDR, fromFile.ServiceCIDR)
		merge("key-algorithm", &f.KeyAlgorithm, fromFile.KeyAlgorithm)
		merge("validity", &f.Validity, fromFile.Validity)
		merge("ca-validity", &f.CAValidity, fromFile.CAValidity)
		if !o.flags.Changed("apiserver-san") && fromFile.APIServerSANs != nil {
			f.APIServerSANs = fromFile.APIServerSANs
		}
		if !o.flags.Changed("node") && fromFile.Nodes != nil {
			f.Nodes = fromFile.Nodes
		}
	}
	o.file = f
	if u, err := url.Parse(f.Server); err != nil || u.Scheme != "https" || u.Host == "" {
		return ca.Spec{}, fmt.Errorf("server %q is not an https:// URL", f.Server)
	}
	alg, err := ca.ParseKeyAlgorithm(f.KeyAlgorithm)
	if err != nil {
		return ca.Spec{}, err
	}
	spec := ca.Spec{ClusterDomain: f.ClusterDomain, ServiceCIDR: f.ServiceCIDR, APIServerSANs: f.APIServerSANs,
		Nodes: f.Nodes, KeyAlgorithm: alg}
	if spec.Validity, err = lifetime("validity", f.Validity, ca.DefaultValidity, warn); err != nil {
		return ca.Spec{}, err
	}
	if spec.CAValidity, err = lifetime("ca-validity", f.CAValidity, ca.DefaultCAValidity, warn); err != nil {
		return ca.Spec{}, err
	}
	spec.Default()
	return spec, spec.Validate()
}

// lifetime parses a --validity style value; "" is the default, and a value
// above the default prints a warning.
func lifetime(flag, v string, def time.Duration, warn func(string)) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := ca.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flag, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("--%s %s must be positive", flag, v)
	}
	if d > def {
		warn(fmt.Sprintf("warning: --%s %s is longer than the default %s; a leaked key stays useful for longer", flag, v, days(def)))
	}
	return d, nil
}

func days(d time.Duration) string { return fmt.Sprintf("%dd", int(d/(24*time.Hour))) }

func newPKIInitCmd(s streams) *cobra.Command {
	o := &pkiOptions{}
	cmd := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "Write the cluster PKI and kubeconfigs; fills in what is missing",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runPKIInit(o, s)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runPKIInit(o *pkiOptions, s streams) error {
	spec, err := o.resolve(func(m string) { fmt.Fprintln(s.err, m) })
	if err != nil {
		return err
	}
	plan, err := ca.NewPlan(o.dir, spec, o.force)
	if err != nil {
		return err
	}
	out, err := plan.Build()
	if err != nil {
		return err
	}
	if len(out.Files)+len(out.Credentials) == 0 {
		fmt.Fprintf(s.err, "%s is complete; nothing to write\n", o.dir)
		return nil
	}
	if err := fsutil.CheckWritableDir(o.dir); err != nil {
		return err
	}
	if err := ca.WriteFiles(o.dir, out.Files); err != nil {
		return err
	}
	if err := kubeconfig.WriteCredentials(o.dir, o.file.ClusterName, o.file.Server, out.Credentials); err != nil {
		return err
	}
	fmt.Fprintf(s.err, "wrote %d files and %d kubeconfigs to %s; next: kubectl --kubeconfig %s get ns\n",
		len(out.Files), len(out.Credentials), o.dir, filepath.Join(o.dir, "admin.conf"))
	return nil
}

func newPKIPlanCmd(s streams) *cobra.Command {
	o := &pkiOptions{}
	cmd := &cobra.Command{
		Use:   "plan --dir DIR",
		Short: "Show what pki init would add or change; writes nothing",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			spec, err := o.resolve(func(m string) { fmt.Fprintln(s.err, m) })
			if err != nil {
				return err
			}
			plan, err := ca.NewPlan(o.dir, spec, o.force)
			if err != nil {
				return err
			}
			if err := plan.WriteText(s.out); err != nil {
				return err
			}
			if err := writeRotationNext(s.out, o.dir); err != nil {
				return err
			}
			if err := plan.Err(); err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

type pkiCheckOptions struct {
	dir, clusterDomain, serviceCIDR, output string
	now                                     func() time.Time
}

func newPKICheckCmd(s streams) *cobra.Command {
	o := &pkiCheckOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "check --dir DIR",
		Short: "Lint a cluster PKI, ours or another tool's; exit 1 on problems",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runPKICheck(o, s)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree")
	fs.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "cluster DNS domain the apiserver cert must name")
	fs.StringVar(&o.serviceCIDR, "service-cidr", "10.96.0.0/12", "service CIDR whose first IP the apiserver cert must name")
	fs.StringVarP(&o.output, "output", "o", "text", "text or json")
	return cmd
}

func runPKICheck(o *pkiCheckOptions, s streams) error {
	if o.dir == "" {
		return errors.New("--dir is required")
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	emb, err := kubeconfig.ScanDir(o.dir)
	if err != nil {
		return err
	}
	rep, err := ca.Check(o.dir, emb, ca.CheckOptions{ClusterDomain: o.clusterDomain, ServiceCIDR: o.serviceCIDR, Now: o.now()})
	if err != nil {
		return err
	}
	if o.output == "json" {
		err = writeJSON(s.out, rep)
	} else {
		err = rep.WriteText(s.out)
	}
	if err != nil {
		return err
	}
	if n := len(rep.Findings); n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d problems found in %s", n, o.dir)}
	}
	return nil
}

// writeRotationNext prints, when a CA rotation is in progress in dir, its
// next phase and the files that phase would change.
func writeRotationNext(w io.Writer, dir string) error {
	st, err := ca.ReadRotationState(dir)
	if err != nil || !st.InProgress() {
		return err
	}
	if _, err := fmt.Fprintf(w, "\n%s\n", ca.RotationStatus(dir, st)); err != nil {
		return err
	}
	// A preview: drop-old is shown even before the service-account
	// key's wait is over, with a warning saying so.
	plan, err := (&ca.Rotator{Dir: dir, Kubeconfigs: kubeconfig.Editor{}, Force: true}).Plan(nil, "")
	if err != nil {
		return err
	}
	return writeRotationPlan(w, plan)
}
