package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"mailroom/bench/internal/benchnode"
)

// measureRequestLog (-request-log=both) starts two nodes on fresh
// databases, one keeping the request log (the default) and one not
// (MAILROOM_RETAIN_REQUEST_LOGS=0), and loads POST /v1/emails on them in
// alternating slices (on, off, off, on, ...), so that a drift of the
// machine's speed weighs on both alike. Then it reports the storage per
// logged request: the table and its indexes after a checkpoint, over the
// rows the node wrote. The difference comes last.
func measureRequestLog(ctx context.Context, o options, name string, fresh func() (string, func(), error), out io.Writer) (string, error) {
	type side struct {
		label string
		node  *benchnode.Node
		url   string
		r     *result
		rates []float64
	}
	var sides [2]*side
	for i, on := range []bool{true, false} {
		u, drop, err := fresh()
		if err != nil {
			return "", err
		}
		defer drop()
		env := map[string]string{"MAILROOM_DATABASE_URL": u, "MAILROOM_SERVICE_DOMAIN": "bench.test"}
		label := name + " log on"
		if !on {
			env["MAILROOM_RETAIN_REQUEST_LOGS"] = "0"
			label = name + " log off"
		}
		if err := o.realEnv(env); err != nil {
			return "", err
		}
		n, err := benchnode.Start(ctx, benchnode.Options{Env: env, LogLevel: benchnode.Errors})
		if err != nil {
			return "", err
		}
		defer n.Stop()
		sides[i] = &side{label: label, node: n, url: u, r: &result{}}
	}
	for _, s := range sides {
		if _, err := load(ctx, s.node.URL+"/v1/emails", s.node.Key, sendBody(o.to()), http.StatusOK, o.conns, time.Second); err != nil {
			return "", err
		}
	}
	rounds := max(1, int(o.duration/o.slice))
	var ratios []float64
	for i := range rounds {
		order := []*side{sides[0], sides[1]}
		if i%2 == 1 {
			order = []*side{sides[1], sides[0]}
		}
		for _, s := range order {
			time.Sleep(settle)
			r, err := load(ctx, s.node.URL+"/v1/emails", s.node.Key, sendBody(o.to()), http.StatusOK, o.conns, o.slice)
			if err != nil {
				return "", fmt.Errorf("%s: %w", s.label, err)
			}
			s.r.add(r)
			s.rates = append(s.rates, r.rate())
		}
		ratios = append(ratios, sides[0].rates[i]/sides[1].rates[i])
	}
	for _, s := range sides {
		slices.Sort(s.r.latencies)
		fmt.Fprintf(out, "%-16s POST /v1/emails: %8.0f sends/s  p50 %v  p99 %v  errors %d  CPU %v per send%s\n",
			s.label, s.r.rate(), s.r.p(50), s.r.p(99), s.r.errors, s.r.perRequest(), s.r.serverShare(name))
	}
	dropped := counter(sides[0].node, "mailroom_request_log_dropped_total")
	// Stopping the node writes what its log still holds.
	sides[0].node.Stop()
	rows, bytes, err := logStorage(ctx, name, sides[0].url)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(out, "%-16s storage: %d rows logged, %d dropped, %.0f bytes per logged request (table and indexes%s)\n",
		sides[0].label, rows, int64(dropped), float64(bytes)/float64(max(rows, 1)), map[bool]string{true: ", after a checkpoint", false: ""}[name == "sqlite"])
	on, off := sides[0].r.rate(), sides[1].r.rate()
	line := fmt.Sprintf("%s request log on/off %.3f (%.0f vs %.0f sends/s, %+.1f%%)%s", name, on/off, on, off, (on/off-1)*100, spread(ratios))
	fmt.Fprintln(out, line)
	return line, nil
}

// counter reads a counter of the node's registry (0 when absent).
func counter(n *benchnode.Node, metric string) float64 {
	mfs, _ := n.Registry.Gather()
	for _, mf := range mfs {
		if mf.GetName() == metric && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// logStorage is the request log's rows and bytes (table and indexes) in a
// stopped node's database: on SQLite after a checkpoint, from dbstat; on
// PostgreSQL, pg_total_relation_size.
func logStorage(ctx context.Context, name, url string) (rows, bytes int64, err error) {
	driver, dsn := "pgx", url
	if name == "sqlite" {
		driver, dsn = "sqlite", "file:"+url
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	size := `SELECT pg_total_relation_size('request_logs')`
	if name == "sqlite" {
		if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return 0, 0, err
		}
		size = `SELECT SUM(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'request_logs')`
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM request_logs`).Scan(&rows); err != nil {
		return 0, 0, err
	}
	if err := db.QueryRowContext(ctx, size).Scan(&bytes); err != nil {
		return 0, 0, fmt.Errorf("request log size: %w", err)
	}
	return rows, bytes, nil
}

// runRequestLog is -request-log=both over SQLite, then PostgreSQL with -pg.
func runRequestLog(ctx context.Context, o options, out io.Writer) error {
	var lines []string
	if !o.skipLite {
		dir, err := os.MkdirTemp("", "mailroom-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		n := 0
		line, err := measureRequestLog(ctx, o, "sqlite", func() (string, func(), error) {
			n++
			return fmt.Sprintf("%s/mailroom%d.db", dir, n), func() {}, nil
		}, out)
		if err != nil {
			return err
		}
		lines = append(lines, line)
	}
	if o.pg != "" {
		line, err := measureRequestLog(ctx, o, "postgres", func() (string, func(), error) { return scratchSchema(ctx, o.pg) }, out)
		if err != nil {
			return err
		}
		lines = append(lines, line)
	}
	fmt.Fprintln(out, strings.Join(lines, "; "))
	return nil
}
