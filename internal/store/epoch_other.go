//go:build !unix

package store

import (
	"errors"
	"sync/atomic"
)

// openEpoch has no shared mapping here; SQLite runs without a key cache.
func openEpoch(string) (*atomic.Uint64, error) {
	return nil, errors.New("store: no shared epoch on this platform")
}
