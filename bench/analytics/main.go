// Command analytics measures GET /v1/analytics for 400 days by day with a
// tag breakdown over a workspace with 1,000,000 sent emails. The rollup
// tables are seeded directly through analytics.Add (the same upserts the
// event path runs), not by sending a million emails: 2,500 sends a day
// over 400 days, spread across 2 domains × 2 mail classes × 5 templates ×
// 20 campaign tag values × 3 plan tag values, with deliveries, bounces,
// opens and clicks. Usage: go run ./bench/analytics [-pg postgres://...]
package main

import (
	"context"
	"flag"
	"fmt"
	"mailroom/bench/internal/benchnode"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"mailroom/bench/internal/load"
	"mailroom/internal/analytics"
	"mailroom/internal/store"
)

const (
	days      = 400
	perDay    = 2500
	campaigns = 20
	plans     = 3
)

func main() {
	pg := flag.String("pg", "", "PostgreSQL URL (default: embedded SQLite in a temp dir)")
	conns := flag.Int("c", 4, "connections")
	dur := flag.Duration("d", 5*time.Second, "duration of the run")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the measured run to this file")
	flag.Parse()

	dir, _ := os.MkdirTemp("", "mailroom-bench-analytics")
	if os.Getenv("KEEP") == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Println("dir", dir)
	}
	db := filepath.Join(dir, "mailroom.db")
	if *pg != "" {
		db = *pg
	}
	ctx := context.Background()
	node, err := benchnode.Start(ctx, benchnode.Options{Dir: dir, Env: map[string]string{"MAILROOM_DATABASE_URL": db}})
	if err != nil {
		panic(err)
	}
	defer node.Stop()
	a, ws, key := node.App, node.Workspace, node.Key

	today := time.Now().UTC().Truncate(24 * time.Hour)
	start := time.Now()
	var total int64
	cells := 2 * 2 * 5 * campaigns * plans
	for d := 0; d < days; d++ {
		at := today.AddDate(0, 0, -d)
		err := a.DB.InTx(ctx, func(tx *store.Tx) error {
			i := 0
			for dom := 0; dom < 2; dom++ {
				for cl := 0; cl < 2; cl++ {
					for tpl := 0; tpl < 5; tpl++ {
						for c := 0; c < campaigns; c++ {
							for p := 0; p < plans; p++ {
								sent := int64(perDay / cells)
								if i < perDay%cells {
									sent++
								}
								i++
								class := analytics.Transactional
								if cl == 1 {
									class = analytics.Marketing
								}
								analytics.Add(tx, ws.ID, at, analytics.Dims{
									Domain: fmt.Sprintf("d%d.example", dom), MailClass: class, TemplateID: fmt.Sprintf("tpl_%d", tpl),
									Tags: map[string]string{"campaign": fmt.Sprintf("c%02d", c), "plan": fmt.Sprintf("p%d", p)},
								}, analytics.Counts{Sent: sent, Delivered: sent - sent/20, Bounced: sent / 20, Opens: sent / 2, UniqueOpens: sent / 3, Clicks: sent / 5, UniqueClicks: sent / 6, MachineOpens: sent / 4})
								total += sent
							}
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			panic(err)
		}
	}
	fmt.Printf("seeded %d sends over %d days (%d rollup cells a day) in %s\n", total, days, cells, time.Since(start).Round(time.Millisecond))

	from := today.AddDate(0, 0, -(days - 1)).Format("2006-01-02")
	url := "http://" + a.HTTPAddr() + "/v1/analytics?from=" + from + "&to=" + today.Format("2006-01-02") + "&group_by=day&breakdown=tag&tag_key=campaign"
	r := load.JSONRequest("GET", url, key, nil)
	probe, _ := r()
	res, err := http.DefaultClient.Do(probe)
	if err != nil || res.StatusCode != 200 {
		panic(fmt.Sprint("probe: ", err, res))
	}
	res.Body.Close()
	load.Run(*conns, time.Second, 200, r)
	stop := load.StartCPUProfile(*prof)
	c0 := load.ProcessCPU()
	got := load.Run(*conns, *dur, 200, r)
	stop()
	// SQLite runs in this process; PostgreSQL's own CPU is not in this figure.
	cpu := (load.ProcessCPU() - c0) / time.Duration(max(got.Requests, 1))
	fmt.Printf("GET /v1/analytics 400 days by day, tag breakdown (%s): %s\n", a.DB.Dialect, got)
	fmt.Printf("RESULT analytics %s: p99 %.2f ms, p50 %.2f ms, %.0f req/s at %d connections over %d sends; this process's CPU %.2f ms per request\n",
		a.DB.Dialect, float64(got.P99)/1e6, float64(got.P50)/1e6, got.PerSecond(), *conns, total, float64(cpu)/1e6)
}
