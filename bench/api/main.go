// Command api measures an authenticated cheap route (GET /v1/api-keys: key
// lookup, rate limit, JSON) over loopback against a bare net/http JSON
// handler in the same run. Usage: go run ./bench/api [-pg postgres://...]
package main

import (
	"context"
	"flag"
	"fmt"
	"mailroom/bench/internal/benchnode"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"mailroom/bench/internal/load"
)

func main() {
	pg := flag.String("pg", "", "PostgreSQL URL (default: embedded SQLite in a temp dir)")
	conns := flag.Int("c", 64, "connections")
	dur := flag.Duration("d", 5*time.Second, "duration of each run")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the Mailroom run")
	flag.Parse()

	dir, _ := os.MkdirTemp("", "mailroom-bench-api")
	defer os.RemoveAll(dir)
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
	a, key := node.App, node.Key

	bareURL, closeBare := load.BareJSONServer()
	defer closeBare()
	load.Run(*conns, time.Second, 200, load.JSONRequest("GET", bareURL, "", nil)) // warm up
	bare := load.Run(*conns, *dur, 200, load.JSONRequest("GET", bareURL, "", nil))
	fmt.Printf("bare net/http JSON:        %s\n", bare)
	url := "http://" + a.HTTPAddr() + "/v1/api-keys"
	load.Run(*conns, time.Second, 200, load.JSONRequest("GET", url, key, nil))
	if *prof != "" {
		f, _ := os.Create(*prof)
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	got := load.Run(*conns, *dur, 200, load.JSONRequest("GET", url, key, nil))
	fmt.Printf("GET /v1/api-keys (%s): %s\n", a.DB.Dialect, got)
	fmt.Printf("RESULT GET /v1/api-keys %s: %.0f req/s, p99 %.2f ms, %.0f%% of bare net/http (%.0f req/s)\n",
		a.DB.Dialect, got.PerSecond(), float64(got.P99)/1e6, 100*got.PerSecond()/bare.PerSecond(), bare.PerSecond())
}
