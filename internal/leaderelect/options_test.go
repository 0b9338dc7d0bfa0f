package leaderelect

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	componentbasevalidation "k8s.io/component-base/config/validation"
)

// The defaults are kube-controller-manager's and kube-scheduler's, and
// the flags are component-base's, under kube's names.
func TestNewOptionsKubeDefaults_J1(t *testing.T) {
	t.Parallel()
	o := NewOptions(SchedulerLease)
	fs := pflag.NewFlagSet("scheduler", pflag.ContinueOnError)
	o.BindFlags(fs)
	want := map[string]string{
		"leader-elect":                    "true",
		"leader-elect-lease-duration":     "15s",
		"leader-elect-renew-deadline":     "10s",
		"leader-elect-retry-period":       "2s",
		"leader-elect-resource-lock":      "leases",
		"leader-elect-resource-name":      "kube-scheduler",
		"leader-elect-resource-namespace": "kube-system",
	}
	for name, def := range want {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("no --%s flag", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s default %q, want %q", name, f.DefValue, def)
		}
	}
	if err := o.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
	if err := fs.Parse([]string{"--leader-elect=false", "--leader-elect-lease-duration=30s", "--leader-elect-resource-name=other"}); err != nil {
		t.Fatal(err)
	}
	if o.LeaderElect || o.LeaseDuration.Duration != 30*time.Second || o.ResourceName != "other" {
		t.Errorf("parsed %+v", o.LeaderElectionConfiguration)
	}
	if NewOptions(ControllerManagerLease).ResourceName != "kube-controller-manager" {
		t.Error("the controller manager's lease is not kube-controller-manager")
	}
}

func TestValidateNamesTheFlag_J1(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string // "" means valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"off skips every check", func(o *Options) { o.LeaderElect = false; o.LeaseDuration.Duration = -1 }, ""},
		{"zero lease", func(o *Options) { o.LeaseDuration.Duration = 0 }, "--leader-elect-lease-duration 0s: must be greater than zero"},
		{"negative renew", func(o *Options) { o.RenewDeadline.Duration = -time.Second }, "--leader-elect-renew-deadline -1s: must be greater than zero"},
		{"zero retry", func(o *Options) { o.RetryPeriod.Duration = 0 }, "--leader-elect-retry-period 0s: must be greater than zero"},
		{"renew equals lease", func(o *Options) { o.RenewDeadline.Duration = 15 * time.Second },
			"--leader-elect-lease-duration 15s: must be greater than --leader-elect-renew-deadline (15s)"},
		{"renew over lease", func(o *Options) { o.LeaseDuration.Duration = 5 * time.Second },
			"--leader-elect-lease-duration 5s: must be greater than --leader-elect-renew-deadline (10s)"},
		{"retry jitter reaches renew", func(o *Options) { o.RetryPeriod.Duration = 9 * time.Second },
			"--leader-elect-renew-deadline 10s: must be greater than --leader-elect-retry-period (9s) times 1.2"},
		{"endpoints lock", func(o *Options) { o.ResourceLock = "endpoints" }, `--leader-elect-resource-lock "endpoints": must be "leases"`},
		{"no name", func(o *Options) { o.ResourceName = "" }, "--leader-elect-resource-name: required"},
		{"no namespace", func(o *Options) { o.ResourceNamespace = "" }, "--leader-elect-resource-namespace: required"},
		{"bad name", func(o *Options) { o.ResourceName = "Kube_Scheduler" }, `--leader-elect-resource-name "Kube_Scheduler": a lowercase RFC 1123 subdomain`},
		{"bad namespace", func(o *Options) { o.ResourceNamespace = "kube.system" }, `--leader-elect-resource-namespace "kube.system": must not contain dots`},
		{"short but valid", func(o *Options) {
			o.LeaseDuration.Duration, o.RenewDeadline.Duration, o.RetryPeriod.Duration = 2*time.Second, time.Second, 500*time.Millisecond
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions(SchedulerLease)
			tc.change(o)
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
				t.Errorf("got %v, want one line starting %q", err, tc.want)
			}
			// Whatever component-base's own validation refuses, Validate
			// refuses too.
			if errs := componentbasevalidation.ValidateLeaderElectionConfiguration(&o.LeaderElectionConfiguration,
				field.NewPath("leaderElection")); len(errs) > 0 && err == nil {
				t.Errorf("component-base refuses (%v), Validate does not", errs.ToAggregate())
			}
		})
	}
}

// Every combination of the three durations that component-base accepts
// or refuses: Validate refuses all it refuses.
func TestValidateAtLeastComponentBase_J1(t *testing.T) {
	t.Parallel()
	values := []time.Duration{-time.Second, 0, time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 10 * time.Second, 15 * time.Second}
	for _, lease := range values {
		for _, renew := range values {
			for _, retry := range values {
				o := NewOptions(ControllerManagerLease)
				o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = metav1.Duration{Duration: lease}, metav1.Duration{Duration: renew},
					metav1.Duration{Duration: retry}
				errs := componentbasevalidation.ValidateLeaderElectionConfiguration(&o.LeaderElectionConfiguration, field.NewPath("x"))
				if len(errs) > 0 && o.Validate() == nil {
					t.Errorf("lease %v renew %v retry %v: component-base refuses (%v), Validate does not", lease, renew, retry, errs.ToAggregate())
				}
			}
		}
	}
}
