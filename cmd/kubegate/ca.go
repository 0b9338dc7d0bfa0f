package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/progress"
	"github.com/kubegate/kubegate/kubeconfig"
)

func newCACmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "Manage the cluster's certificate authorities",
	}
	cmd.AddCommand(newCARotateCmd(s))
	return cmd
}

// defaultReloadWait is how long a rotation phase waits after the previous
// one, so that every reader has loaded the files it wrote: kubegate polls
// its files every second (filewatch.DefaultInterval).
const defaultReloadWait = 5 * time.Second

type caRotateOptions struct {
	dir, phase    string
	cas           []string
	dryRun, force bool
	reloadWait    time.Duration
	minTokenAge   time.Duration
	now           func() time.Time
	sleep         func(time.Duration)
}

func newCARotateCmd(s streams) *cobra.Command {
	o := &caRotateOptions{now: time.Now, sleep: time.Sleep}
	cmd := &cobra.Command{
		Use:   "rotate --dir DIR [--phase trust-both|reissue|drop-old] [--ca cluster|front-proxy|sa|all]",
		Short: "Replace the cluster CA, the front-proxy CA or the service-account key in three phases, one per run",
		Long: `Replace a CA (or the service-account key) without a failed request, in three
phases, each run by one invocation (without --phase, the next one runs):

  trust-both  mint the new CA and make every bundle (pki/ca.crt,
              pki/front-proxy-ca.crt, pki/sa.pub, the certificate-authority-data
              of DIR/*.conf) trust the old and the new one
  reissue     the new CA signs from now on: re-sign every unexpired leaf under
              pki/ and kubeconfig client certificate the old CA signed (same key,
              subject, SANs, usages and validity); the new service-account key
              signs new tokens
  drop-old    remove the old CA (and the old service-account key) from every
              bundle; refused while a certificate of DIR the old CA signed is
              unexpired, and for the service-account key until --min-token-age
              after reissue (unless --force)

Each phase can be run again after it stopped midway, and running a finished phase
again changes nothing. Progress is kept in DIR/pki/rotation.json; a running
phase holds the lock of DIR/pki/rotation.lock.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runCARotate(o, s)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dir, "dir", "", "directory of the cluster tree")
	fs.StringVar(&o.phase, "phase", "", "trust-both, reissue or drop-old (default: the next phase)")
	fs.StringSliceVar(&o.cas, "ca", nil, "what to rotate: cluster, front-proxy, sa or all, repeatable (default: the rotation in progress, else all)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the files the phase would change; write nothing")
	fs.DurationVar(&o.minTokenAge, "min-token-age", ca.DefaultMinTokenAge, "least time between reissue and drop-old of the service-account key, for every token the old key signed to be refreshed")
	fs.BoolVar(&o.force, "force", false, "drop the old service-account key before --min-token-age has passed")
	fs.DurationVar(&o.reloadWait, "reload-wait", defaultReloadWait, "least time between two phases, for every reader to load the files the previous one wrote")
	return cmd
}

func runCARotate(o *caRotateOptions, s streams) error {
	if o.dir == "" {
		return errors.New("--dir is required")
	}
	var phase ca.Phase
	if o.phase != "" {
		p, err := ca.ParsePhase(o.phase)
		if err != nil {
			return fmt.Errorf("--phase: %w", err)
		}
		phase = p
	}
	var cas []string
	if len(o.cas) > 0 {
		var err error
		if cas, err = ca.ParseRotateTargets(o.cas); err != nil {
			return err
		}
	}
	if o.reloadWait < 0 {
		return fmt.Errorf("--reload-wait %s must not be negative", o.reloadWait)
	}
	if o.minTokenAge <= 0 {
		return fmt.Errorf("--min-token-age %s must be positive", o.minTokenAge)
	}
	if !o.dryRun {
		// Held from the plan to the last write, so that two runs cannot
		// interleave.
		unlock, err := ca.LockRotation(o.dir)
		if err != nil {
			return err
		}
		defer unlock()
	}
	// On a terminal, a spinner naming the phase's step; erased before
	// anything else is printed.
	spinner := progress.New(s.err)
	defer spinner.Done()
	r := &ca.Rotator{Dir: o.dir, Kubeconfigs: kubeconfig.Editor{}, MinTokenAge: o.minTokenAge, Force: o.force, Now: o.now, Progress: spinner.Spin}
	plan, err := r.Plan(cas, phase)
	spinner.Done()
	if err != nil {
		return err
	}
	who := strings.Join(plan.CAs, ", ")
	if plan.Done {
		fmt.Fprintf(s.err, "%s is already done for %s; nothing to change%s\n", plan.Phase, who, nextStep(o.dir, plan.Phase))
		return nil
	}
	if o.dryRun {
		return writeRotationPlan(s.out, plan)
	}
	if err := fsutil.CheckWritableDir(o.dir); err != nil {
		return err
	}
	if st := plan.Before; st.InProgress() && st.Done != "" {
		if wait := st.Updated.Add(o.reloadWait).Sub(o.now()); wait > 0 {
			fmt.Fprintf(s.err, "waiting %s for every reader to load what %s wrote (--reload-wait)\n", wait.Round(100*time.Millisecond), st.Done)
			o.sleep(wait)
			plan, err = r.Plan(cas, phase)
			spinner.Done()
			if err != nil {
				return err
			}
		}
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(s.err, "warning: %s\n", w)
	}
	err = r.Apply(plan)
	spinner.Done()
	if err != nil {
		return fmt.Errorf("%s stopped midway: %w; run it again to finish", plan.Phase, err)
	}
	files := plan.Files()
	fmt.Fprintf(s.err, "%s done for %s: %d files changed (%s)%s\n", plan.Phase, who, len(files), strings.Join(files, ", "), nextStep(o.dir, plan.Phase))
	return nil
}

// nextStep says what to run after phase.
func nextStep(dir string, phase ca.Phase) string {
	switch phase {
	case ca.PhaseTrustBoth:
		return fmt.Sprintf("; hand the new pki/ca.crt to every client outside %s, then: kubegate ca rotate --dir %s", dir, dir)
	case ca.PhaseReissue:
		return fmt.Sprintf("; once every client uses its re-signed certificate and every token was renewed: kubegate ca rotate --dir %s", dir)
	default:
		return "; the rotation is over"
	}
}

// writeRotationPlan prints one line per file: what the phase does to it
// and why.
func writeRotationPlan(w io.Writer, p *ca.RotationPlan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s for %s:\n", p.Phase, strings.Join(p.CAs, ", "))
	for _, c := range p.Changes {
		action := "write"
		if c.Remove {
			action = "remove"
		}
		fmt.Fprintf(&b, "  %-7s %-40s %s\n", action, c.Path, c.Why)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
