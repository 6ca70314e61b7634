package delivery

import (
	"slices"
	"testing"
)

// padded fills a chunk of the batch's addresses up to a power of two
// without writing over the chunk that follows it in the same array.
func TestPaddedLeavesTheNextChunkAlone(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	got := padded(all[:3])
	if want := []string{"a", "b", "c", "c"}; !slices.Equal(got, want) {
		t.Errorf("padded %v, want %v", got, want)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(all, want) {
		t.Errorf("the addresses became %v, want %v", all, want)
	}
	if got := padded(all[:4]); len(got) != 4 {
		t.Errorf("padded a power of two to %d", len(got))
	}
}
