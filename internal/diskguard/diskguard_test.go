package diskguard

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"mailroom/internal/apierr"
)

// The real statfs of a test directory reads some free space, and a
// threshold beyond any disk trips the guard from New.
func TestTripsBeyondTheDisk(t *testing.T) {
	dir := t.TempDir()
	sp, err := Statfs(dir)
	if err != nil || sp.Free == 0 || sp.Total < sp.Free {
		t.Fatalf("statfs %s: %+v, %v", dir, sp, err)
	}
	if g := New(Options{Dir: dir, Threshold: Threshold{Bytes: 1 << 20}}); g.Full() || g.Err() != nil {
		t.Fatalf("1 MB threshold on a disk with %d MB free: full", sp.Free>>20)
	}
	g := New(Options{Dir: dir, Threshold: Threshold{Bytes: 100000 << 40}, Setting: "100000TB"})
	if !g.Full() || !apierr.Is(g.Err(), "storage_full") {
		t.Fatalf("100000TB threshold: not full (%v)", g.Err())
	}
	if c := g.Cause(); !strings.Contains(c, "the disk holding "+dir+" has ") || !strings.Contains(c, "MAILROOM_MIN_FREE_DISK is 100000TB") {
		t.Fatalf("cause %q", c)
	}
	if s := g.Short(); strings.Contains(s, dir) {
		t.Fatalf("short %q names the directory", s)
	}
	if g := New(Options{Dir: dir, Threshold: Threshold{}}); g.Full() {
		t.Fatal("0 (off) tripped")
	}
	var nilGuard *Guard
	if nilGuard.Full() || nilGuard.Err() != nil {
		t.Fatal("a nil guard refuses")
	}
}

// The guard logs once when it trips and once when it clears, as the free
// space crosses the threshold (here the smaller of 1 GB and 10%).
func TestTripAndClearAreLogged(t *testing.T) {
	var logs bytes.Buffer
	free := uint64(50 << 30)
	g := &Guard{o: Options{Dir: "/data", Threshold: Threshold{Bytes: 1 << 30, Percent: 10}, Setting: "1GB,10%",
		Log: slog.New(slog.NewTextHandler(&logs, nil))}}
	g.read = func(string) (Space, error) { return Space{Free: free, Total: 100 << 30}, nil }
	for _, step := range []struct {
		free uint64
		full bool
	}{{50 << 30, false}, {900 << 20, true}, {800 << 20, true}, {2 << 30, false}, {2 << 30, false}} {
		free = step.free
		g.Check()
		if g.Full() != step.full {
			t.Fatalf("%d MB free: full %v, want %v", step.free>>20, g.Full(), step.full)
		}
	}
	if n := strings.Count(logs.String(), "disk nearly full"); n != 1 {
		t.Errorf("%d trip lines, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "disk space freed"); n != 1 {
		t.Errorf("%d clear lines, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "the disk holding /data has 900 MB free") {
		t.Errorf("the trip line does not say the free space:\n%s", logs.String())
	}
}
