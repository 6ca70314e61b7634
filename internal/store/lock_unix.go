//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes flock's exclusive lock without waiting. flock (not fcntl)
// locks belong to the open file, so even a second open in the same process
// is refused, and closing another descriptor of the file does not drop it.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}
