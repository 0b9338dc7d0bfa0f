package ttlmap

import (
	"testing"
	"time"
)

func TestMap(t *testing.T) {
	t.Parallel()
	const t0 = int64(1_000_000_000)
	add := func(t int64, d time.Duration) int64 { return t + int64(d) }
	tests := []struct {
		name string
		run  func(t *testing.T, m *Map[int, string])
	}{
		{name: "an entry is found until it expires", run: func(t *testing.T, m *Map[int, string]) {
			m.Set(1, "a", add(t0, time.Second), t0)
			if v, ok := m.Get(1, add(t0, 999*time.Millisecond)); !ok || v != "a" {
				t.Errorf("Get before expiry = (%q, %v), want (a, true)", v, ok)
			}
			if _, ok := m.Get(1, add(t0, time.Second)); ok {
				t.Error("Get at expiry found the entry, want it gone")
			}
		}},
		{name: "an expired entry is not stored", run: func(t *testing.T, m *Map[int, string]) {
			m.Set(1, "a", t0, t0)
			if m.Len() != 0 {
				t.Errorf("Len = %d, want 0", m.Len())
			}
		}},
		{name: "the size bound holds", run: func(t *testing.T, m *Map[int, string]) {
			for i := range 100 {
				m.Set(i, "v", add(t0, time.Hour), t0)
				if m.Len() > 3 {
					t.Fatalf("after %d sets Len = %d, want at most 3", i+1, m.Len())
				}
			}
			if v, ok := m.Get(99, t0); !ok || v != "v" {
				t.Errorf("latest entry = (%q, %v), want it kept", v, ok)
			}
		}},
		{name: "expired entries are swept before live ones are evicted", run: func(t *testing.T, m *Map[int, string]) {
			m.Set(1, "live", add(t0, time.Hour), t0)
			m.Set(2, "dies", add(t0, time.Second), t0)
			m.Set(3, "dies", add(t0, time.Second), t0)
			later := add(t0, 2*time.Second)
			m.Set(4, "new", add(t0, time.Hour), later)
			if _, ok := m.Get(1, later); !ok {
				t.Error("live entry evicted while expired ones were there")
			}
			if m.Len() != 2 {
				t.Errorf("Len = %d, want 2 (the two live entries)", m.Len())
			}
		}},
		{name: "replacing a key in a full map evicts nothing", run: func(t *testing.T, m *Map[int, string]) {
			for i := range 3 {
				m.Set(i, "v", add(t0, time.Hour), t0)
			}
			m.Set(0, "w", add(t0, time.Hour), t0)
			for i := range 3 {
				if _, ok := m.Get(i, t0); !ok {
					t.Errorf("entry %d evicted by a replacement", i)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, New[int, string](3))
		})
	}
}
