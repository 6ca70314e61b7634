//go:build !unix

package diskguard

import "errors"

// Statfs is not available here: the guard never trips, and the database's
// own disk-full errors still answer 507.
func Statfs(string) (Space, error) {
	return Space{}, errors.New("diskguard: free space cannot be read on this system")
}
