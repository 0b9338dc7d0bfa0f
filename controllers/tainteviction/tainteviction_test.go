package tainteviction

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
