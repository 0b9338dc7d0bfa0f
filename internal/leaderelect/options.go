// Package leaderelect runs a control-plane component, kubegate controllers
// or kubegate scheduler, only while it holds its Lease in kube-system, as
// kube-controller-manager and kube-scheduler do, with their flags and
// defaults (docs/kubernetes-behaviour.md J.1). The election is client-go's,
// on a Lease lock; this package binds its flags, checks them, and ties the
// component's run to the lease: it runs while held, stops and hands the
// lease over on shutdown, and reports a lost lease as an error.
package leaderelect

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/component-base/config/options"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
)

// The Leases kube's components hold, and kubegate's commands with them.
const (
	ControllerManagerLease = "kube-controller-manager"
	SchedulerLease         = "kube-scheduler"
)

// The flags BindFlags registers, named in Validate's errors.
const (
	flagLeaseDuration     = "--leader-elect-lease-duration"
	flagRenewDeadline     = "--leader-elect-renew-deadline"
	flagRetryPeriod       = "--leader-elect-retry-period"
	flagResourceLock      = "--leader-elect-resource-lock"
	flagResourceName      = "--leader-elect-resource-name"
	flagResourceNamespace = "--leader-elect-resource-namespace"
)

// Options are a component's leader election settings, component-base's
// configuration type, which its own flag binding fills.
type Options struct {
	componentbaseconfig.LeaderElectionConfiguration
}

// NewOptions returns the defaults kube-controller-manager and
// kube-scheduler give their election: on, a Lease lock named lease in
// kube-system, held 15 s, renewed within 10 s, tried every 2 s.
func NewOptions(lease string) *Options {
	// The recommended defaults of component-base's versioned type, with
	// the lock kube's components set before applying them: left empty,
	// the recommendation is the Endpoints lock client-go no longer has.
	versioned := componentbaseconfigv1alpha1.LeaderElectionConfiguration{ResourceLock: resourcelock.LeasesResourceLock}
	componentbaseconfigv1alpha1.RecommendedDefaultLeaderElectionConfiguration(&versioned)
	o := &Options{}
	if err := componentbaseconfigv1alpha1.Convert_v1alpha1_LeaderElectionConfiguration_To_config_LeaderElectionConfiguration(
		&versioned, &o.LeaderElectionConfiguration, nil); err != nil {
		panic(err) // a conversion between two fixed types cannot fail
	}
	o.ResourceName = lease
	o.ResourceNamespace = metav1.NamespaceSystem
	return o
}

// BindFlags registers kube's --leader-elect flags on fs, with component-base's
// own binding and help, the current values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	options.BindLeaderElectionFlags(&o.LeaderElectionConfiguration, fs)
}

// Validate checks the settings as component-base's validation and
// client-go's elector do, and returns the first fault as one error naming
// its flag; with --leader-elect=false nothing is checked, as in kube.
func (o *Options) Validate() error {
	if !o.LeaderElect {
		return nil
	}
	lease, renew, retry := o.LeaseDuration.Duration, o.RenewDeadline.Duration, o.RetryPeriod.Duration
	switch {
	case lease <= 0:
		return fmt.Errorf("%s %v: must be greater than zero", flagLeaseDuration, lease)
	case renew <= 0:
		return fmt.Errorf("%s %v: must be greater than zero", flagRenewDeadline, renew)
	case retry <= 0:
		return fmt.Errorf("%s %v: must be greater than zero", flagRetryPeriod, retry)
	case lease <= renew:
		return fmt.Errorf("%s %v: must be greater than %s (%v)", flagLeaseDuration, lease, flagRenewDeadline, renew)
	case renew <= time.Duration(leaderelection.JitterFactor*float64(retry)):
		// A deadline that jittered retries can overrun: client-go refuses it.
		return fmt.Errorf("%s %v: must be greater than %s (%v) times %v", flagRenewDeadline, renew, flagRetryPeriod, retry,
			leaderelection.JitterFactor)
	case o.ResourceLock != resourcelock.LeasesResourceLock:
		return fmt.Errorf("%s %q: must be %q", flagResourceLock, o.ResourceLock, resourcelock.LeasesResourceLock)
	case o.ResourceName == "":
		return fmt.Errorf("%s: required", flagResourceName)
	case o.ResourceNamespace == "":
		return fmt.Errorf("%s: required", flagResourceNamespace)
	}
	// What the API server would refuse on the first attempt, said once
	// here rather than at every retry.
	if msgs := validation.IsDNS1123Subdomain(o.ResourceName); len(msgs) > 0 {
		return fmt.Errorf("%s %q: %s", flagResourceName, o.ResourceName, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Label(o.ResourceNamespace); len(msgs) > 0 {
		return fmt.Errorf("%s %q: %s", flagResourceNamespace, o.ResourceNamespace, strings.Join(msgs, "; "))
	}
	return nil
}

// lease is the Lease's namespace/name, as logs and errors give it.
func (o *Options) lease() string { return o.ResourceNamespace + "/" + o.ResourceName }
