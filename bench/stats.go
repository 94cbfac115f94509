package bench

import "sort"

// Median is Pct(xs, 50): the lower middle value for an even count.
func Median(xs []float64) float64 { return Pct(xs, 50) }

// Pct is the nearest-rank p-th percentile of xs (0 when empty); xs is not
// changed.
func Pct(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[(len(s)-1)*p/100]
}
