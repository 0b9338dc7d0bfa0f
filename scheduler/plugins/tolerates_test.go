package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The TaintToleration filter, the unschedulable filter and spreading's
// node inclusion judge tolerations by kube-scheduler's rule (E.2).
func TestTolerates_E2(t *testing.T) {
	taint := &v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	for _, tt := range []struct {
		name string
		tol  v1.Toleration
		want bool
	}{
		{"equal, same value", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu"}, true},
		{"empty operator is Equal", v1.Toleration{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}, true},
		{"equal, other value", v1.Toleration{Key: "dedicated", Value: "cpu"}, false},
		{"exists, same key", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists}, true},
		{"exists, no key: every taint", v1.Toleration{Operator: v1.TolerationOpExists}, true},
		{"exists, other key", v1.Toleration{Key: "other", Operator: v1.TolerationOpExists}, false},
		{"other effect", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}, false},
		{"Gt, gate off", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpGt, Value: "1"}, false},
		{"Lt, gate off", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpLt, Value: "9"}, false},
		{"unknown operator", v1.Toleration{Key: "dedicated", Operator: "Matches", Value: "gpu"}, false},
	} {
		if got := tolerates([]v1.Toleration{{Key: "unrelated", Value: "x"}, tt.tol}, taint); got != tt.want {
			t.Errorf("%s: tolerates %+v = %v, want %v", tt.name, tt.tol, got, tt.want)
		}
	}
	if tolerates(nil, taint) {
		t.Error("no tolerations tolerate a taint")
	}
}

// The TaintToleration filter and spreading's taint policy name the first
// NoSchedule or NoExecute taint not tolerated, PreferNoSchedule ones left
// to scoring (E.2).
func TestUntoleratedTaint_E2(t *testing.T) {
	taints := []v1.Taint{
		{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "gpu", Value: "yes", Effect: v1.TaintEffectNoSchedule},
		{Key: "down", Effect: v1.TaintEffectNoExecute},
	}
	gpu := v1.Toleration{Key: "gpu", Operator: v1.TolerationOpExists}
	down := v1.Toleration{Key: "down", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for _, tt := range []struct {
		name string
		tols []v1.Toleration
		want string // key of the taint found, "" for none
	}{
		{"none tolerated: the first in order", nil, "gpu"},
		{"first tolerated", []v1.Toleration{gpu}, "down"},
		{"both tolerated, PreferNoSchedule ignored", []v1.Toleration{down, gpu}, ""},
	} {
		got, ok := untoleratedTaint(taints, tt.tols)
		if ok != (tt.want != "") || got.Key != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.name, got.Key, ok, tt.want)
		}
	}
}
