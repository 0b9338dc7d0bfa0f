package main

import (
	"slices"
	"testing"
	"time"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{7}, 7},
		{"odd, unsorted", []float64{9, 1, 5}, 5},
		{"even: mean of the middle two", []float64{4, 1, 3, 10}, 3.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := slices.Clone(tc.in)
			if got := bench.Median(in); got != tc.want {
				t.Errorf("bench.Median(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("median reordered its input: %v, was %v", in, tc.in)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	hundred := make([]time.Duration, 100) // 1ms .. 100ms
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one value is every quantile", []time.Duration{3}, 0.99, 3},
		{"p50 of 100 is the 50th", hundred, 0.5, 50 * time.Millisecond},
		{"p99 of 100 is the 99th", hundred, 0.99, 99 * time.Millisecond},
		{"p100 is the largest", hundred, 1, 100 * time.Millisecond},
		{"a tiny q is the smallest", hundred, 0.0001, time.Millisecond},
		{"p99 of 10 is the largest: nearest rank rounds up", hundred[:10], 0.99, 10 * time.Millisecond},
		{"p50 of 4 is the 2nd", hundred[:4], 0.5, 2 * time.Millisecond},
		{"negative delays sort first", []time.Duration{-2, -1, 5}, 0.5, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := quantile(tc.sorted, tc.q); got != tc.want {
				t.Errorf("quantile(%d values, %v) = %v, want %v", len(tc.sorted), tc.q, got, tc.want)
			}
		})
	}
}

func TestPerSecond(t *testing.T) {
	t.Parallel()
	if got := perSecond(500, 250*time.Millisecond); got != 2000 {
		t.Errorf("perSecond(500, 250ms) = %v, want 2000", got)
	}
	if got := perSecond(500, 0); got != 0 {
		t.Errorf("perSecond(500, 0) = %v, want 0", got)
	}
}

func TestDelays(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	created := map[string]time.Time{"a": at(0), "b": at(100)}
	seen := []map[string]time.Time{
		{"a": at(3), "b": at(101)},
		{"a": at(-1)}, // had a before the creator had its answer; never saw b
		{},            // saw nothing
	}
	got, missed := delays(created, seen)
	want := []time.Duration{-time.Millisecond, time.Millisecond, 3 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Errorf("delays = %v, want %v (sorted, negative kept)", got, want)
	}
	if missed != 3 {
		t.Errorf("missed = %d, want 3", missed)
	}
	// A pod whose create failed is not in created: no one missed it.
	seen[0]["c"] = at(200)
	if _, missed := delays(created, seen); missed != 3 {
		t.Errorf("an event for a pod not created changed missed to %d, want 3", missed)
	}
}
