package app_test

import (
	"os"
	"runtime/debug"
	"testing"

	"mailroom/internal/app"
	"mailroom/internal/testkit/testapp"
)

// A node runs the collector at app.GCPercent unless GOGC is set.
func TestNodeGCPercent(t *testing.T) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		t.Skip("GOGC is set in this environment: the node keeps it")
	}
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	testapp.Start(t)
	got := debug.SetGCPercent(before)
	if got != app.GCPercent {
		t.Fatalf("GC percent %d after a node started, want %d", got, app.GCPercent)
	}
}
