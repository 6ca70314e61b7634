package store

// Mark is how far a transaction's deferred work had come at one moment: its
// deferred inserts, queued jobs and after-commit functions. A group commit
// that runs each write inside a SAVEPOINT rewinds to it when the write
// fails, so that the failed write leaves nothing behind either in the
// database or in what the commit would still write.
type Mark struct {
	inserts     int
	args, rows  []int
	jobs, after int
	locals      map[any]int // positions of Local values that are Rewindable
}

// Rewindable is a Local value that keeps deferred work of its own (say,
// counters to add at commit): Mark notes its position and Rewind takes it
// back there, with the deferred inserts of the write that failed.
type Rewindable interface {
	Mark() int
	Rewind(pos int)
}

// Mark notes how far the deferred work has come (see Rewind).
func (tx *Tx) Mark() Mark {
	m := Mark{inserts: len(tx.inserts), jobs: len(tx.pending), after: len(tx.after)}
	if len(tx.inserts) > 0 {
		m.args, m.rows = make([]int, len(tx.inserts)), make([]int, len(tx.inserts))
		for i, d := range tx.inserts {
			m.args[i], m.rows[i] = len(d.args), d.rows
		}
	}
	for k, v := range tx.locals {
		if r, ok := v.(Rewindable); ok {
			if m.locals == nil {
				m.locals = map[any]int{}
			}
			m.locals[k] = r.Mark()
		}
	}
	return m
}

// Rewind forgets the deferred inserts, jobs and after-commit functions
// added since m. Functions registered with BeforeFlush and values kept with
// Local stay: they settle what is deferred and must work with less; a
// Local value that is Rewindable is rewound too.
func (tx *Tx) Rewind(m Mark) {
	tx.inserts = tx.inserts[:m.inserts]
	for i, d := range tx.inserts {
		d.args, d.rows = d.args[:m.args[i]], m.rows[i]
	}
	tx.pending = tx.pending[:m.jobs]
	tx.after = tx.after[:m.after]
	for k, v := range tx.locals {
		if r, ok := v.(Rewindable); ok {
			r.Rewind(m.locals[k]) // 0 for a value made after the mark
		}
	}
}
