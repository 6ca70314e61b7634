package groupcommit

import (
	"sync"
	"time"
)

// loop gathers batches and commits them one at a time: the committer of
// SQLite (one writer anyway) and of PostgreSQL without Pipeline.
func (c *Committer[T]) loop() {
	defer c.wg.Done()
	batch := make([]*write[T], 0, c.cfg.MaxBatch)
	var flushing chan struct{} // closed when the last batch is on disk
	last := 0                  // writes in the last batch, when it had a flush to wait for
	more := time.NewTimer(time.Hour)
	more.Stop()
	for {
		batch = batch[:0]
		select {
		case w := <-c.ops:
			batch = append(batch, w)
		case w := <-c.bulk:
			batch = append(batch, w)
		case <-c.stop:
			c.drain()
			return
		}
		// While the last batch is being flushed, a small batch waits for
		// the flush to end: a commit of a handful costs the writer nearly
		// what one of dozens does, and the committer then wakes on a
		// channel at once instead of waiting for a processor after an fsync.
	gather:
		for flushing != nil && len(batch) < c.cfg.FlushGather {
			select {
			case <-flushing:
				flushing = nil
			case w := <-c.ops:
				batch = append(batch, w)
			case <-c.stop:
				break gather
			}
		}
		// Under load, a little longer: fewer, larger commits leave more
		// CPU to the writers.
		if c.cfg.GatherWait > 0 && last >= c.cfg.GatherAfter && len(batch) < c.cfg.Gather {
			more.Reset(c.cfg.GatherWait)
		wait:
			for len(batch) < c.cfg.Gather {
				select {
				case w := <-c.ops:
					batch = append(batch, w)
				case <-more.C:
					break wait
				case <-c.stop:
					break wait
				}
			}
			more.Stop()
		}
		batch = c.fill(batch)
	fillBulk:
		for n := 0; n < c.cfg.MaxBackground; n++ {
			select {
			case w := <-c.bulk:
				batch = append(batch, w)
			default:
				break fillBulk
			}
		}
		last = 0
		if f := c.commit(batch); f != nil {
			flushing, last = f, len(batch)
		}
	}
}

// loopPipelined is PostgreSQL's committer with Pipeline: it gathers batches
// and hands them to two workers, each committing on its own connection,
// with a second commit in flight only once Pipeline writes are waiting. A
// lone write while nothing is in flight is committed at once.
func (c *Committer[T]) loopPipelined() {
	defer c.wg.Done()
	work := make(chan []*write[T])
	done := make(chan struct{}, 2)
	var workers sync.WaitGroup
	for range 2 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for b := range work {
				c.commit(b)
				done <- struct{}{}
			}
		}()
	}
	defer func() { close(work); workers.Wait() }()
	pipe := c.cfg.Pipeline
	inflight, bulk := 0, 0
	batch := make([]*write[T], 0, 2*pipe)
	for {
		if len(batch) > 0 && (inflight == 0 || inflight == 1 && len(batch) >= pipe) {
			work <- c.fill(batch)
			inflight++
			batch, bulk = make([]*write[T], 0, 2*pipe), 0
			continue
		}
		ops, bulks := c.ops, c.bulk
		if len(batch) >= c.cfg.MaxBatch {
			ops = nil
		}
		if bulk >= c.cfg.MaxBackground {
			bulks = nil
		}
		select {
		case w := <-ops:
			batch = append(batch, w)
		case w := <-bulks:
			batch = append(batch, w)
			bulk++
		case <-done:
			inflight--
		case <-c.stop:
			// Let the commits in flight end, then commit what is gathered
			// and what is queued.
			for ; inflight > 0; inflight-- {
				<-done
			}
			if len(batch) > 0 {
				c.commit(batch)
			}
			c.drain()
			return
		}
	}
}

// fill adds to batch the foreground writes already queued, up to MaxBatch,
// without waiting for more.
func (c *Committer[T]) fill(batch []*write[T]) []*write[T] {
	for len(batch) < c.cfg.MaxBatch {
		select {
		case w := <-c.ops:
			batch = append(batch, w)
		default:
			return batch
		}
	}
	return batch
}

// drain commits what is still queued when the committer stops, in batches.
func (c *Committer[T]) drain() {
	for {
		batch := c.fill(nil)
	bulk:
		for len(batch) < c.cfg.MaxBatch {
			select {
			case w := <-c.bulk:
				batch = append(batch, w)
			default:
				break bulk
			}
		}
		if len(batch) == 0 {
			return
		}
		c.commit(batch)
	}
}
