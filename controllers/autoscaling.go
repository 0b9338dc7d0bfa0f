package controllers

import (
	"fmt"
	"time"
)

// HPASettings are kube-controller-manager's horizontal pod autoscaler
// settings, under the names of its flags. The zero value stands for
// DefaultHPASettings.
type HPASettings struct {
	// SyncPeriod is how often each autoscaler is synced
	// (--horizontal-pod-autoscaler-sync-period).
	SyncPeriod time.Duration
	// DownscaleStabilization is how far back a scale-down looks for higher
	// recommendations (--horizontal-pod-autoscaler-downscale-stabilization),
	// and a behavior's scale-down window when it sets none.
	DownscaleStabilization time.Duration
	// Tolerance is how far from 1.0 the ratio of usage to target must be
	// before the replica count changes (--horizontal-pod-autoscaler-tolerance).
	Tolerance float64
	// CPUInitializationPeriod is how long after a pod starts its CPU
	// samples may be skipped
	// (--horizontal-pod-autoscaler-cpu-initialization-period).
	CPUInitializationPeriod time.Duration
	// InitialReadinessDelay is how long after a pod starts a change of its
	// readiness counts as its first
	// (--horizontal-pod-autoscaler-initial-readiness-delay).
	InitialReadinessDelay time.Duration
}

// DefaultHPASettings are kube-controller-manager's defaults.
func DefaultHPASettings() HPASettings {
	return HPASettings{SyncPeriod: 15 * time.Second, DownscaleStabilization: 5 * time.Minute, Tolerance: 0.1,
		CPUInitializationPeriod: 5 * time.Minute, InitialReadinessDelay: 30 * time.Second}
}

// OrDefault is s, or DefaultHPASettings when s is the zero value.
func (s HPASettings) OrDefault() HPASettings {
	if s == (HPASettings{}) {
		return DefaultHPASettings()
	}
	return s
}

// Validate names the first setting that is out of range, by its flag.
func (s HPASettings) Validate() error {
	switch {
	case s.SyncPeriod <= 0:
		return fmt.Errorf("--horizontal-pod-autoscaler-sync-period %v: want a positive duration", s.SyncPeriod)
	case s.DownscaleStabilization < 0:
		return fmt.Errorf("--horizontal-pod-autoscaler-downscale-stabilization %v is negative", s.DownscaleStabilization)
	case !(s.Tolerance >= 0 && s.Tolerance < 1e9):
		return fmt.Errorf("--horizontal-pod-autoscaler-tolerance %v: want a number from 0", s.Tolerance)
	case s.CPUInitializationPeriod < 0:
		return fmt.Errorf("--horizontal-pod-autoscaler-cpu-initialization-period %v is negative", s.CPUInitializationPeriod)
	case s.InitialReadinessDelay < 0:
		return fmt.Errorf("--horizontal-pod-autoscaler-initial-readiness-delay %v is negative", s.InitialReadinessDelay)
	}
	return nil
}
