//go:build unix

package store

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// openEpoch maps path (created if absent) and returns the counter in its
// first eight bytes. Every process that maps the same file shares the
// counter: an Add in one is seen by a Load in another at once, with no
// system call.
func openEpoch(path string) (*atomic.Uint64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < 8 {
		// Two processes may both grow it; the size is the same either way.
		if err := f.Truncate(8); err != nil {
			return nil, err
		}
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, 8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	// A mapping starts on a page boundary, so the counter is aligned.
	return (*atomic.Uint64)(unsafe.Pointer(&b[0])), nil
}
