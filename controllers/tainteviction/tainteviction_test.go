package tainteviction

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

func TestMinToleration_G13(t *testing.T) {
	tol := func(s *int64) corev1.Toleration {
		return corev1.Toleration{Operator: corev1.TolerationOpExists, TolerationSeconds: s}
	}
	tests := []struct {
		name string
		used []corev1.Toleration
		want time.Duration
	}{
		{"none", nil, 0},
		{"for ever", []corev1.Toleration{tol(nil)}, -1},
		{"shortest wins", []corev1.Toleration{tol(ptr.To[int64](300)), tol(nil), tol(ptr.To[int64](30))}, 30 * time.Second},
		{"zero is now", []corev1.Toleration{tol(ptr.To[int64](300)), tol(ptr.To[int64](0))}, 0},
		{"negative is now", []corev1.Toleration{tol(ptr.To[int64](-5))}, 0},
	}
	for _, tt := range tests {
		if got := minToleration(tt.used); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMatching_G13(t *testing.T) {
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	gpu := corev1.Taint{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoExecute}
	tolUnreachable := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	tolGPU := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "yes"}
	if used, all := matching([]corev1.Taint{unreachable, gpu}, []corev1.Toleration{tolUnreachable, tolGPU}); !all || len(used) != 2 {
		t.Errorf("both tolerated: got %v, %v", used, all)
	}
	if _, all := matching([]corev1.Taint{unreachable, gpu}, []corev1.Toleration{tolUnreachable}); all {
		t.Error("gpu is not tolerated, but matching says all are")
	}
	wrongValue := tolGPU
	wrongValue.Value = "no"
	if _, all := matching([]corev1.Taint{gpu}, []corev1.Toleration{wrongValue}); all {
		t.Error("a toleration of another value tolerated the taint")
	}
}

// G.13: matching says every taint is tolerated exactly when
// component-helpers' FindMatchingUntoleratedTaint finds none untolerated,
// and each toleration it returns tolerates its taint by
// TolerationsTolerateTaint, kube's rule.
func TestMatchingIsKubes_G13(t *testing.T) {
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	gpu := corev1.Taint{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoExecute}
	exists := func(key string, effect corev1.TaintEffect, s *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect, TolerationSeconds: s}
	}
	for _, tt := range []struct {
		name        string
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		want        bool
		wantSeconds []*int64 // tolerationSeconds of the tolerations used, in taint order
	}{
		{"no taints", nil, nil, true, nil},
		{"no tolerations", []corev1.Taint{gpu}, nil, false, nil},
		{"Exists, any key and effect", []corev1.Taint{unreachable, gpu}, []corev1.Toleration{exists("", "", ptr.To[int64](9))}, true, []*int64{ptr.To[int64](9), ptr.To[int64](9)}},
		{"first tolerating toleration is used", []corev1.Taint{gpu}, []corev1.Toleration{
			exists("other", "", ptr.To[int64](1)), exists("gpu", corev1.TaintEffectNoExecute, ptr.To[int64](60)), exists("gpu", "", nil)}, true, []*int64{ptr.To[int64](60)}},
		{"Equal, same value", []corev1.Taint{gpu}, []corev1.Toleration{{Key: "gpu", Value: "yes"}}, true, []*int64{nil}},
		{"Equal, other value", []corev1.Taint{gpu}, []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "no"}}, false, nil},
		{"other effect", []corev1.Taint{gpu}, []corev1.Toleration{exists("gpu", corev1.TaintEffectNoSchedule, nil)}, false, nil},
		{"Gt, off", []corev1.Taint{{Key: "level", Value: "5", Effect: corev1.TaintEffectNoExecute}}, []corev1.Toleration{{Key: "level", Operator: corev1.TolerationOpGt, Value: "1"}}, false, nil},
		{"one of two untolerated", []corev1.Taint{unreachable, gpu}, []corev1.Toleration{exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, ptr.To[int64](300))}, false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logger := klog.Background()
			_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, tt.taints, tt.tolerations, nil, false)
			if untolerated == tt.want {
				t.Fatalf("component-helpers: all tolerated = %v, want %v", !untolerated, tt.want)
			}
			used, all := matching(tt.taints, tt.tolerations)
			if all != tt.want {
				t.Fatalf("matching: all tolerated = %v, want %v", all, tt.want)
			}
			if !all {
				return
			}
			if len(used) != len(tt.taints) {
				t.Fatalf("matching used %d tolerations for %d taints", len(used), len(tt.taints))
			}
			for i := range used {
				if !corev1helpers.TolerationsTolerateTaint(logger, used[i:i+1], &tt.taints[i], false) {
					t.Errorf("toleration %+v does not tolerate taint %+v", used[i], tt.taints[i])
				}
				if !equalSeconds(used[i].TolerationSeconds, tt.wantSeconds[i]) {
					t.Errorf("taint %s: used tolerationSeconds %v, want %v", tt.taints[i].Key, ptr.Deref(used[i].TolerationSeconds, -1), ptr.Deref(tt.wantSeconds[i], -1))
				}
			}
		})
	}
}
