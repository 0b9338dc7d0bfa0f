package ttlmap

import (
	"testing"
	"time"
)

func TestMap(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		run  func(t *testing.T, m *Map[int, string])
	}{
		{name: "an entry is found until it expires", run: func(t *testing.T, m *Map[int, string]) {
			m.Set(1, "a", t0.Add(time.Second), t0)
			if v, ok := m.Get(1, t0.Add(999*time.Millisecond)); !ok || v != "a" {
				t.Errorf("Get before expiry = (%q, %v), want (a, true)", v, ok)
			}
			if _, ok := m.Get(1, t0.Add(time.Second)); ok {
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
				m.Set(i, "v", t0.Add(time.Hour), t0)
				if m.Len() > 3 {
					t.Fatalf("after %d sets Len = %d, want at most 3", i+1, m.Len())
				}
			}
			if v, ok := m.Get(99, t0); !ok || v != "v" {
				t.Errorf("latest entry = (%q, %v), want it kept", v, ok)
			}
		}},
		{name: "expired entries are swept before live ones are evicted", run: func(t *testing.T, m *Map[int, string]) {
			m.Set(1, "live", t0.Add(time.Hour), t0)
			m.Set(2, "dies", t0.Add(time.Second), t0)
			m.Set(3, "dies", t0.Add(time.Second), t0)
			later := t0.Add(2 * time.Second)
			m.Set(4, "new", t0.Add(time.Hour), later)
			if _, ok := m.Get(1, later); !ok {
				t.Error("live entry evicted while expired ones were there")
			}
			if m.Len() != 2 {
				t.Errorf("Len = %d, want 2 (the two live entries)", m.Len())
			}
		}},
		{name: "replacing a key in a full map evicts nothing", run: func(t *testing.T, m *Map[int, string]) {
			for i := range 3 {
				m.Set(i, "v", t0.Add(time.Hour), t0)
			}
			m.Set(0, "w", t0.Add(time.Hour), t0)
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
