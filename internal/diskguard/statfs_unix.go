//go:build unix

package diskguard

import "golang.org/x/sys/unix"

// Statfs reads the space of the file system holding dir (statfs(2)): the
// blocks available to an unprivileged process, as df shows them.
func Statfs(dir string) (Space, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Space{}, err
	}
	return Space{Free: st.Bavail * uint64(st.Bsize), Total: st.Blocks * uint64(st.Bsize)}, nil
}
