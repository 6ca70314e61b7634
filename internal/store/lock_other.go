//go:build !unix

package store

import "os"

// tryLock is a no-op where flock is missing: such systems run one node by
// the operator's care.
func tryLock(*os.File) error { return nil }
