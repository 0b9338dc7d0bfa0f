package bench

import "slices"

// Median returns the middle of xs (the mean of the two middle values when
// there is an even number), or 0 for none. xs is left unchanged.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
