// Package diskguard refuses new work before the disk holding the database
// fills up (issue #39): it reads the free space of a directory every few
// seconds and, while it is below the threshold (MAILROOM_MIN_FREE_DISK),
// says so to the API (507 storage_full), the SMTP listeners (452 4.3.1, as
// Postfix answers; RFC 3463 X.3.1 "mail system full") and /readyz. Work
// already accepted goes on: deliveries free no space, but their outcomes
// must still be written.
package diskguard

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"mailroom/internal/apierr"
)

// Threshold is the free space to keep: Bytes, Percent of the file system,
// or, when both are set, the smaller of the two. Zero for both: no guard.
type Threshold struct {
	Bytes   int64
	Percent float64
}

// Off reports whether the threshold disables the guard.
func (t Threshold) Off() bool { return t.Bytes <= 0 && t.Percent <= 0 }

// of is the threshold in bytes on a file system of total bytes.
func (t Threshold) of(total uint64) uint64 {
	pct := uint64(float64(total) * t.Percent / 100)
	switch {
	case t.Percent <= 0:
		return uint64(t.Bytes)
	case t.Bytes <= 0:
		return pct
	}
	return min(uint64(t.Bytes), pct)
}

// Space is what the file system says about a directory.
type Space struct {
	Free  uint64 // bytes available to this process
	Total uint64
}

// Options configure a Guard.
type Options struct {
	Dir       string    // the directory whose file system is watched
	Threshold Threshold // MAILROOM_MIN_FREE_DISK
	Setting   string    // the setting's value as written, for messages
	Every     time.Duration
	Log       *slog.Logger
}

// Guard watches one directory's free space; a nil *Guard never refuses.
type Guard struct {
	o    Options
	read func(dir string) (Space, error)

	full  atomic.Bool
	mu    sync.Mutex
	last  Space
	stop  chan struct{}
	done  chan struct{}
	start sync.Once
}

// New returns a guard that has read the free space once (so a node
// starting on a full disk refuses from its first request).
func New(o Options) *Guard {
	if o.Every <= 0 {
		o.Every = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	g := &Guard{o: o, read: Statfs}
	g.Check()
	return g
}

// Check reads the free space now, and logs when the guard trips or clears.
func (g *Guard) Check() {
	sp, err := g.read(g.o.Dir)
	if err != nil {
		// An unreadable file system is not a full one; the database's own
		// errors (store.IsDiskFull) still answer 507.
		g.o.Log.Warn("cannot read the free disk space", "dir", g.o.Dir, "err", err)
		return
	}
	g.mu.Lock()
	g.last = sp
	g.mu.Unlock()
	full := !g.o.Threshold.Off() && sp.Free < g.o.Threshold.of(sp.Total)
	if was := g.full.Swap(full); was != full {
		if full {
			g.o.Log.Error("disk nearly full: refusing new work until space is freed", "cause", g.Cause())
		} else {
			g.o.Log.Info("disk space freed: accepting new work again", "cause", g.Cause())
		}
	}
}

// Full reports whether the free space was below the threshold when last read.
func (g *Guard) Full() bool { return g != nil && g.full.Load() }

// Err is apierr.StorageFull while the guard holds, else nil.
func (g *Guard) Err() error {
	if !g.Full() {
		return nil
	}
	return apierr.StorageFull()
}

// Cause says, for people, how much space is left against the threshold:
// "the disk holding DIR has N MB free; MAILROOM_MIN_FREE_DISK is M".
func (g *Guard) Cause() string {
	if g.o.Threshold.Off() {
		g.Check() // not read periodically
	}
	g.mu.Lock()
	sp := g.last
	g.mu.Unlock()
	return fmt.Sprintf("the disk holding %s has %s free of %s; MAILROOM_MIN_FREE_DISK is %s (%s)",
		g.o.Dir, MB(sp.Free), MB(sp.Total), g.o.Setting, MB(g.o.Threshold.of(sp.Total)))
}

// Short is Cause without the directory, for unauthenticated answers (/readyz).
func (g *Guard) Short() string {
	g.mu.Lock()
	sp := g.last
	g.mu.Unlock()
	return fmt.Sprintf("disk nearly full: %s free, MAILROOM_MIN_FREE_DISK is %s", MB(sp.Free), MB(g.o.Threshold.of(sp.Total)))
}

// MB writes n bytes in whole megabytes (MiB), as df -m does.
func MB(n uint64) string { return fmt.Sprintf("%d MB", n>>20) }

// Start reads the free space every Options.Every until Stop (with the
// guard off, never: Cause still reads it for start-up errors).
func (g *Guard) Start(ctx context.Context) error {
	if g.o.Threshold.Off() {
		return nil
	}
	g.start.Do(func() {
		g.stop, g.done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(g.done)
			t := time.NewTicker(g.o.Every)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					g.Check()
				case <-g.stop:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	})
	return nil
}

// Stop ends the readings; a second call does nothing.
func (g *Guard) Stop(context.Context) error {
	if g.stop == nil {
		return nil
	}
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	<-g.done
	return nil
}
