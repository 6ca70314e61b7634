package testkeys_test

import (
	"testing"

	"mailroom/internal/testkit/testkeys"
)

// A domain takes three keys in a row from one source: they must differ from
// each other and from Spare, or a test of a wrong DKIM record could pass.
func TestSourceHandsDistinctKeys(t *testing.T) {
	next := testkeys.Source()
	seen := map[string]bool{testkeys.Spare().N.String(): true}
	for range 3 {
		k, err := next()
		if err != nil {
			t.Fatal(err)
		}
		if k.N.BitLen() != 2048 {
			t.Fatalf("key is %d bits", k.N.BitLen())
		}
		if seen[k.N.String()] {
			t.Fatalf("key handed out twice within three calls, or equal to Spare")
		}
		seen[k.N.String()] = true
		if err := k.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}
