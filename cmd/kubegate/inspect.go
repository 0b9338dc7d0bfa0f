package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/inspect"
	"github.com/kubegate/kubegate/kubeconfig"
)

// maxInspectInput bounds what inspect reads: real credentials are a few
// kilobytes, kubeconfigs with many users a few hundred.
const maxInspectInput = 16 << 20

type inspectOptions struct {
	caFile, keyFile, output string
	kubeconfig              string // kubeconfig inspect without FILE: the file kubectl would use
	now                     func() time.Time
}

func (o *inspectOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.caFile, "ca", "", "verify certificate chains against the CA certificates in this PEM file")
	fs.StringVar(&o.keyFile, "key", "", "verify JWT signatures with the public keys in this PEM file (such as pki/sa.pub)")
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
}

func (o *inspectOptions) validate() error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	return nil
}

func newCertInspectCmd(s streams) *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect FILE|-",
		Short: "Explain a certificate, bundle, CSR, key, kubeconfig or JWT",
		Long: `Explain a credential: a PEM certificate or bundle, a CSR, a private key
(type and size only), a kubeconfig (every cluster CA and user credential in it)
or a JWT. It shows what openssl would, plus the identity kube-apiserver maps the
credential to, whether it verifies (--ca, --key, or a kubeconfig's own CA) and
when it expires. FILE - reads standard input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return runInspect(o, args[0], s)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// newKubeconfigInspectCmd is `cert inspect` for kubeconfigs; without FILE
// it inspects what kubectl would load.
func newKubeconfigInspectCmd(s streams) *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect [FILE|-]",
		Short: "Explain every cluster, user and context of a kubeconfig",
		Long: `Explain a kubeconfig, as "kubegate cert inspect" does. Without FILE it
inspects the configuration kubectl would use: --kubeconfig, else every file in
KUBECONFIG, else ~/.kube/config.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if len(args) == 1 {
				return runInspect(o, args[0], s)
			}
			return runInspectDefault(o, s)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to inspect when FILE is not given")
	return cmd
}

// readInput reads FILE, or standard input for "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, errors.Unwrap(err))
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInspectInput+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", inputName(name), err)
	}
	if len(data) > maxInspectInput {
		return nil, fmt.Errorf("read %s: larger than %d MiB, too large to be a credential", inputName(name), maxInspectInput>>20)
	}
	return data, nil
}

func inputName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

func (o *inspectOptions) inspectOptions(baseDir string) (inspect.Options, error) {
	opts := inspect.Options{Now: o.now, BaseDir: baseDir}
	if o.caFile != "" {
		data, err := os.ReadFile(o.caFile)
		if err != nil {
			return opts, fmt.Errorf("--ca: %w", err)
		}
		if opts.Roots, err = inspect.ParseCAs(data); err != nil {
			return opts, fmt.Errorf("--ca %s: %w", o.caFile, err)
		}
		opts.RootsName = o.caFile
	}
	if o.keyFile != "" {
		data, err := os.ReadFile(o.keyFile)
		if err != nil {
			return opts, fmt.Errorf("--key: %w", err)
		}
		if opts.Keys, err = inspect.ParseVerifyKeys(data); err != nil {
			return opts, fmt.Errorf("--key %s: %w", o.keyFile, err)
		}
		opts.KeysName = o.keyFile
	}
	return opts, nil
}

func runInspect(o *inspectOptions, name string, s streams) error {
	data, err := readInput(name, s.in)
	if err != nil {
		return err
	}
	baseDir := "."
	if name != "-" {
		baseDir = filepath.Dir(name)
	}
	return inspectAndWrite(o, inputName(name), data, baseDir, s.out)
}

func runInspectDefault(o *inspectOptions, s streams) error {
	cfg, err := kubeconfig.LoadDefault(o.kubeconfig)
	if err != nil {
		return err
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	// LoadDefault made every file reference absolute.
	return inspectAndWrite(o, kubeconfig.DefaultPath(o.kubeconfig), data, string(filepath.Separator), s.out)
}

// inspectAndWrite writes the report only when the whole of it was built,
// so bad input prints nothing to stdout.
func inspectAndWrite(o *inspectOptions, name string, data []byte, baseDir string, out io.Writer) error {
	opts, err := o.inspectOptions(baseDir)
	if err != nil {
		return err
	}
	r, err := inspect.Inspect(data, opts)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", name, err)
	}
	var buf bytes.Buffer
	if o.output == "json" {
		err = r.WriteJSON(&buf)
	} else {
		err = r.WriteText(&buf)
	}
	if err != nil {
		return err
	}
	_, err = out.Write(buf.Bytes())
	return err
}
