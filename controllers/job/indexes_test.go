package job

import (
	"fmt"
	"testing"
)

func TestIndexSet_G6(t *testing.T) {
	for _, tc := range []struct {
		in          string
		completions int
		add         []int
		want        string
		total       int
		missing     string // the first 4 not in the set, index 1 skipped
	}{
		{"", 5, nil, "", 0, "[0 2 3 4]"},
		{"1,3-5,7", 10, nil, "1,3-5,7", 5, "[0 2 6 8]"},
		{"1,3-5,7", 10, []int{2, 6}, "1-7", 7, "[0 8 9]"},
		{"0-2147483000", 10, nil, "0-9", 10, "[]"},          // cut to completions, not enumerated
		{"x,5-3,-1,2-,4", 6, []int{0}, "0,4", 2, "[2 3 5]"}, // junk skipped
		{"0-1000000000", 2147483647, []int{1000000001}, "0-1000000001", 1000000002, "[1000000002 1000000003 1000000004 1000000005]"},
	} {
		s := parseIndexes(tc.in, tc.completions).with(tc.add)
		missing := fmt.Sprint(s.missing(tc.completions, 4, map[int]bool{1: true}))
		if s.String() != tc.want || s.total() != tc.total || missing != tc.missing {
			t.Errorf("%q (+%v, completions %d) = %q, total %d, missing %s; want %q, %d, %s", tc.in, tc.add, tc.completions,
				s.String(), s.total(), missing, tc.want, tc.total, tc.missing)
		}
		for _, i := range tc.add {
			if !s.has(i) {
				t.Errorf("%q: has(%d) false", s, i)
			}
		}
	}
}
