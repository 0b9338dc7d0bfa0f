package controllers

import (
	"math"
	"testing"
	"time"
)

func TestHPASettingsDefaultsAndRanges_G19(t *testing.T) {
	t.Parallel()
	if got, want := (HPASettings{}).OrDefault(), DefaultHPASettings(); got != want {
		t.Errorf("zero settings: got %+v, want kube's defaults %+v", got, want)
	}
	set := HPASettings{SyncPeriod: time.Second}
	if got := set.OrDefault(); got != set {
		t.Errorf("settings given: got %+v, want them kept (a zero window stays zero)", got)
	}
	for _, tc := range []struct {
		name   string
		change func(*HPASettings)
		want   string
	}{
		{"defaults", func(*HPASettings) {}, ""},
		{"zero window", func(s *HPASettings) { s.DownscaleStabilization = 0 }, ""},
		{"zero sync period", func(s *HPASettings) { s.SyncPeriod = 0 }, "--horizontal-pod-autoscaler-sync-period 0s: want a positive duration"},
		{"negative tolerance", func(s *HPASettings) { s.Tolerance = -0.1 }, "--horizontal-pod-autoscaler-tolerance -0.1: want a number from 0"},
		{"NaN tolerance", func(s *HPASettings) { s.Tolerance = math.NaN() }, "--horizontal-pod-autoscaler-tolerance NaN: want a number from 0"},
		{"negative readiness delay", func(s *HPASettings) { s.InitialReadinessDelay = -time.Second },
			"--horizontal-pod-autoscaler-initial-readiness-delay -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultHPASettings()
			tc.change(&s)
			got := ""
			if err := s.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
