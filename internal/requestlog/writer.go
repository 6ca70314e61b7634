package requestlog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// Buffer is how many entries wait for the writer; past it Record drops
// (mailroom_request_log_dropped_total) rather than slow a request.
const Buffer = 8192

// A transaction inserts what gathered over flushEvery, or maxBatch rows:
// a handful of transactions a second under load, so the log's commits do
// not crowd the sends' on SQLite's one writer.
const (
	maxBatch   = 512
	flushEvery = 100 * time.Millisecond
)

// Writer takes entries from the request path and inserts them in batches
// on its own goroutine: Record never blocks and never touches the
// database. Start and Stop make it a background part of the node.
type Writer struct {
	db      *store.DB
	log     *slog.Logger
	ch      chan Entry
	dropped prometheus.Counter

	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	started  bool
}

// NewWriter builds a writer over db, its drop counter registered on reg.
func NewWriter(db *store.DB, reg prometheus.Registerer, log *slog.Logger) *Writer {
	w := &Writer{db: db, log: log, ch: make(chan Entry, Buffer), quit: make(chan struct{}), done: make(chan struct{}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "mailroom_request_log_dropped_total",
			Help: "Request log entries not kept: the writer's buffer was full, or their insert failed."})}
	reg.MustRegister(w.dropped)
	return w
}

// Record queues e for the log; when the buffer is full it is dropped and
// counted, so a slow database never holds a request.
func (w *Writer) Record(e Entry) {
	select {
	case w.ch <- e:
	default:
		w.dropped.Inc()
	}
}

// Start runs the writer until Stop.
func (w *Writer) Start(context.Context) error {
	w.started = true
	go w.run()
	return nil
}

// Stop writes what is queued and ends the writer; a second call does nothing.
func (w *Writer) Stop(ctx context.Context) error {
	w.stopOnce.Do(func() { close(w.quit) })
	if !w.started {
		return nil
	}
	select {
	case <-w.done:
	case <-ctx.Done():
	}
	return nil
}

// run inserts, from the first entry on, what gathers over flushEvery (or
// maxBatch entries) in one transaction.
func (w *Writer) run() {
	defer close(w.done)
	batch := make([]Entry, 0, maxBatch)
	for {
		select {
		case e := <-w.ch:
			batch = w.fill(append(batch[:0], e))
			w.write(batch)
		case <-w.quit:
			for {
				batch = w.gather(batch[:0])
				if len(batch) == 0 {
					return
				}
				w.write(batch)
			}
		}
	}
}

// fill adds to batch what arrives within flushEvery, up to maxBatch.
func (w *Writer) fill(batch []Entry) []Entry {
	t := time.NewTimer(flushEvery)
	defer t.Stop()
	for len(batch) < maxBatch {
		select {
		case e := <-w.ch:
			batch = append(batch, e)
		case <-t.C:
			return batch
		case <-w.quit:
			return batch
		}
	}
	return batch
}

// gather adds to batch what is queued, up to maxBatch, without waiting.
func (w *Writer) gather(batch []Entry) []Entry {
	for len(batch) < maxBatch {
		select {
		case e := <-w.ch:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

func (w *Writer) write(batch []Entry) {
	for i := range batch {
		batch[i].ID = ids.At(idPrefix, batch[i].At)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := insert(ctx, w.db, batch); err != nil {
		w.dropped.Add(float64(len(batch)))
		w.log.Warn("request log: entries not written", "entries", len(batch), "err", err)
	}
}
