package main

import "testing"

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		ratios []float64
		want   string
	}{
		{nil, ""},
		{[]float64{0.3}, ""}, // one round has no spread
		{[]float64{0.25, 0.31, 0.40}, " (3 rounds: median 0.31, 0.25 to 0.40)"},
		{[]float64{0.2, 0.3, 0.34, 0.5}, " (4 rounds: median 0.32, 0.20 to 0.50)"},
	} {
		if got := spread(tc.ratios); got != tc.want {
			t.Errorf("spread(%v) = %q, want %q", tc.ratios, got, tc.want)
		}
	}
}
