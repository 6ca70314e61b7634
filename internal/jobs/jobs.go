// Package jobs is the durable queue: River over the same database as the
// rows, so that a job is inserted in the transaction that creates the row it
// acts on (store.Tx.AddJob) and survives any crash with it. SQLite uses
// River's riversqlite driver; PostgreSQL uses riverdatabasesql over pgx's
// database/sql driver, because the store speaks database/sql in both
// dialects and River must share its transactions (see docs/decisions.md).
package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivermigrate"

	"mailroom/internal/store"
)

// Queue owns the River client.
type Queue struct {
	Client  *river.Client[*sql.Tx]
	db      *store.DB
	started bool
}

// Options tune the workers.
type Options struct {
	Workers      *river.Workers // nil makes an insert-only client (CLI commands)
	Queues       map[string]river.QueueConfig
	Periodic     []*river.PeriodicJob
	Logger       *slog.Logger
	RescueAfter  time.Duration // a job running longer than this after a crash is retried
	PollInterval time.Duration
	// ClientID names this node in River (attempted_by, leadership); the
	// node heartbeat uses it to take up a dead node's running jobs.
	ClientID string
}

// Migrate applies River's own migrations.
func Migrate(ctx context.Context, db *store.DB) error {
	m, err := rivermigrate.New(db.QueueDriver(), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating queue tables: %w", err)
	}
	return nil
}

// New builds the queue and installs the store hook that inserts the jobs a
// transaction gathered, inside that transaction.
func New(db *store.DB, o Options) (*Queue, error) {
	cfg := &river.Config{Logger: o.Logger, ID: o.ClientID}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Workers != nil {
		cfg.Workers = o.Workers
		cfg.Queues = o.Queues
		if cfg.Queues == nil {
			cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 50}}
		}
		cfg.PeriodicJobs = o.Periodic
		// A node may enqueue work for a worker that another area registers
		// (or a newer node runs): the deliver job is inserted by sending.
		cfg.SkipUnknownJobCheck = true
		cfg.RescueStuckJobsAfter = o.RescueAfter
		if cfg.RescueStuckJobsAfter == 0 {
			cfg.RescueStuckJobsAfter = 10 * time.Minute
		}
		cfg.JobTimeout = cfg.RescueStuckJobsAfter / 2
		cfg.FetchPollInterval = o.PollInterval
		if cfg.FetchPollInterval == 0 {
			cfg.FetchPollInterval = 200 * time.Millisecond
		}
		cfg.FetchCooldown = cfg.FetchPollInterval / 4
		if cfg.FetchCooldown < time.Millisecond {
			cfg.FetchCooldown = time.Millisecond
		}
	}
	c, err := river.NewClient(db.QueueDriver(), cfg)
	if err != nil {
		return nil, fmt.Errorf("creating queue client: %w", err)
	}
	q := &Queue{Client: c, db: db}
	db.SetBeforeCommit(q.insertPending)
	return q, nil
}

func (q *Queue) insertPending(ctx context.Context, tx *sql.Tx, pending []any) error {
	params := make([]river.InsertManyParams, 0, len(pending))
	for _, p := range pending {
		switch v := p.(type) {
		case river.InsertManyParams:
			params = append(params, v)
		case river.JobArgs:
			params = append(params, river.InsertManyParams{Args: v})
		default:
			return fmt.Errorf("jobs: cannot insert %T", p)
		}
	}
	if len(params) == 1 {
		_, err := q.Client.InsertTx(ctx, tx, params[0].Args, params[0].InsertOpts)
		return err
	}
	_, err := q.Client.InsertManyTx(ctx, tx, params)
	return err
}

// Start runs the workers until Stop.
func (q *Queue) Start(ctx context.Context) error {
	if err := q.Client.Start(ctx); err != nil {
		return err
	}
	q.started = true
	return nil
}

// Stop lets running jobs finish (up to ctx's deadline), then cancels them;
// a cancelled job is retried by whichever node runs next.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.started {
		return nil
	}
	q.started = false
	if err := q.Client.Stop(ctx); err != nil {
		return q.Client.StopAndCancel(context.Background())
	}
	return nil
}
