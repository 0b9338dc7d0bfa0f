package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// streams are the command's standard input and outputs: data to out,
// status and errors to err.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// logger returns the logger of a long-running command: text on the
// error stream, warnings and errors only unless verbose.
func (s streams) logger(verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	l := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}))
	// The Kubernetes libraries kubegate runs (the JWT authenticator,
	// client-go) log through klog: their lines go to the same place, in
	// the same format, at the same level.
	klog.SetSlogLogger(l)
	return l
}

// version is set with -ldflags "-X main.version=…"; otherwise it comes from
// the module's build information.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func newRootCmd(s streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubegate",
		Short:         "Cluster PKI, kube-apiserver-exact authentication, and a small control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.AddCommand(
		newVersionCmd(s),
		newPKICmd(s),
		newCertCmd(s),
		newCACmd(s),
		newKubeconfigCmd(s),
		newTokenCmd(s),
		newGatewayCmd(s),
		newAPIServerCmd(s),
		newUpCmd(s),
		newSchedulerCmd(s),
		newNodesCmd(s),
		newControllersCmd(s),
	)
	return root
}

func newVersionCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the kubegate version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(s.out, "kubegate %s\n", buildVersion())
			return err
		},
	}
}
