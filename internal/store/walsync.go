package store

import (
	"fmt"
	"os"
	"sync"
)

// walSync makes SQLite commits durable outside the writer's lock.
//
// The writer connection runs with synchronous=NORMAL: a commit writes its
// WAL frames and returns without waiting for the disk. Nothing that commits
// through this package is answered before walSync has flushed the WAL
// (an fsync of the whole file, so one flush covers every commit made before
// it began). That is the durability of synchronous=FULL, with one
// difference: the single writer no longer holds the database while the disk
// works, so the group committer builds its next transaction during the flush
// of the last one, and every commit that waited meanwhile shares the next
// flush.
//
// Committed frames are visible to readers before they are flushed; on power
// loss (not on a crash of the process, whose writes the kernel keeps) a
// reader may have seen a row that is gone after restart, but no caller was
// told it was stored.
type walSync struct {
	path string
	sync func(*os.File) error // (*os.File).Sync; tests stand in

	mu      sync.Mutex
	f       *os.File      // the WAL, opened at the first flush
	commits uint64        // commits made
	synced  uint64        // commits known to be on disk
	running chan struct{} // closed when the flush in progress ends; nil when none
}

// committed counts a commit and returns the number to wait for.
func (s *walSync) committed() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits++
	return s.commits
}

// wait returns when commit n is on disk: it joins the flush in progress if
// that began after commit n, or runs the next one.
func (s *walSync) wait(n uint64) error {
	s.mu.Lock()
	for {
		if s.synced >= n {
			s.mu.Unlock()
			return nil
		}
		if ch := s.running; ch != nil {
			s.mu.Unlock()
			<-ch
			s.mu.Lock()
			continue
		}
		target, ch := s.commits, make(chan struct{})
		s.running = ch
		s.mu.Unlock()
		err := s.flush()
		s.mu.Lock()
		s.running = nil
		close(ch)
		if err != nil {
			// The callers waiting on this flush try again; this one reports.
			s.mu.Unlock()
			return fmt.Errorf("store: flushing the WAL: %w", err)
		}
		s.synced = max(s.synced, target)
	}
}

// flush writes the WAL's data to disk. SQLite keeps the WAL while any
// connection is open (ours are), but if the file was replaced the new one
// is opened and flushed too.
func (s *walSync) flush() error {
	for range 2 {
		if s.f == nil {
			f, err := os.OpenFile(s.path, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			s.f = f
		}
		sync := s.sync
		if sync == nil {
			sync = (*os.File).Sync
		}
		if err := sync(s.f); err != nil {
			return err
		}
		held, err1 := s.f.Stat()
		now, err2 := os.Stat(s.path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return nil
		}
		s.f.Close()
		s.f = nil
	}
	return fmt.Errorf("%s keeps changing", s.path)
}

func (s *walSync) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}
