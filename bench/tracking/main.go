// Command tracking measures the tracking routes at 64 connections: the
// click redirect (GET /t/c/{token}: open the signed token, count, 302) and
// the open pixel (GET /t/o/{token}: 1×1 GIF), each beside a bare net/http
// handler answering the same (a 302, a GIF) in the same run. The tokens
// name a real tracked email, so the recorder writes its counters and
// rollups meanwhile. Usage: go run ./bench/tracking [-pg postgres://...]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"mailroom/bench/internal/benchnode"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mailroom/bench/internal/load"
	"mailroom/internal/tracking"
)

func bare(h http.HandlerFunc) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }
}

var gif = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

func get(url string) load.Request {
	return func() (*http.Request, error) {
		r, err := http.NewRequest("GET", url, nil)
		if err == nil {
			r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36")
		}
		return r, err
	}
}

func main() {
	pg := flag.String("pg", "", "PostgreSQL URL (default: embedded SQLite in a temp dir)")
	conns := flag.Int("c", 64, "connections")
	dur := flag.Duration("d", 5*time.Second, "duration of each run")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the two Mailroom runs to this file")
	flag.Parse()

	dir, _ := os.MkdirTemp("", "mailroom-bench-tracking")
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "mailroom.db")
	if *pg != "" {
		db = *pg
	}
	ctx := context.Background()
	node, err := benchnode.Start(ctx, benchnode.Options{Dir: dir, Env: map[string]string{"MAILROOM_DATABASE_URL": db, "MAILROOM_OUTBOUND": "smtp://127.0.0.1:1"}})
	if err != nil {
		panic(err)
	}
	defer node.Stop()
	a, ws, key := node.App, node.Workspace, node.Key
	base := "http://" + a.HTTPAddr()

	// One tracked email (its delivery fails against port 1; its tracking
	// row is what the counts land on).
	doms := struct {
		Domains []struct{ Domain string } `json:"domains"`
	}{}
	req, _ := http.NewRequest("GET", base+"/v1/domains", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	json.NewDecoder(res.Body).Decode(&doms)
	res.Body.Close()
	body := fmt.Sprintf(`{"from":"hi@%s","to":["ann@example.net"],"subject":"b","html":"<a href=\"https://shop.example/\">x</a>","track_opens":true,"track_clicks":true,"tags":{"campaign":"bench"}}`, doms.Domains[0].Domain)
	req, _ = http.NewRequest("POST", base+"/v1/emails", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	var sent struct{ ID string }
	json.NewDecoder(res.Body).Decode(&sent)
	res.Body.Close()
	if sent.ID == "" {
		panic("send failed")
	}
	s := tracking.Signer{Box: a.Box}
	l := tracking.Link{WorkspaceID: ws.ID, EmailID: sent.ID, Issued: time.Now().Add(-time.Hour).Truncate(time.Second), URL: "https://shop.example/landing?utm_source=mail"}
	click := base + tracking.ClickPath + s.ClickToken(l)
	open := base + tracking.OpenPath + s.OpenToken(l)

	bareRedirect, c1 := bare(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://shop.example/landing?utm_source=mail")
		w.WriteHeader(http.StatusFound)
	})
	defer c1()
	barePixel, c2 := bare(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/gif")
		w.Write(gif)
	})
	defer c2()

	// CPU per request is this process's (server, load generator and, on
	// SQLite, the database) over the run: steadier than req/s on a busy machine.
	run := func(name, url string, want int) load.Result {
		load.Run(*conns, time.Second, want, get(url)) // warm up
		c0 := load.ProcessCPU()
		r := load.Run(*conns, *dur, want, get(url))
		cpu := (load.ProcessCPU() - c0) / time.Duration(max(r.Requests, 1))
		fmt.Printf("%-28s %s, CPU %v per request\n", name+":", r, cpu.Round(time.Microsecond/10))
		return r
	}
	br := run("bare net/http 302", bareRedirect, 302)
	stop := load.StartCPUProfile(*prof) // the click route's run only
	cr := run("GET /t/c/{token} ("+a.DB.Dialect.String()+")", click, 302)
	stop()
	bp := run("bare net/http GIF", barePixel, 200)
	or := run("GET /t/o/{token} ("+a.DB.Dialect.String()+")", open, 200)
	if err := a.Tracking().Flush(ctx); err != nil {
		panic(err)
	}
	req, _ = http.NewRequest("GET", base+"/v1/emails/"+sent.ID, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	var e struct{ Opens, Clicks int64 }
	json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	fmt.Printf("recorded on the email: %d opens, %d clicks (measured runs served %d and %d, plus warm-ups)\n", e.Opens, e.Clicks, or.Requests, cr.Requests)
	fmt.Printf("RESULT tracking %s: click %.0f req/s (p99 %.2f ms, %.0f%% of bare %.0f), pixel %.0f req/s (p99 %.2f ms, %.0f%% of bare %.0f)\n",
		a.DB.Dialect, cr.PerSecond(), float64(cr.P99)/1e6, 100*cr.PerSecond()/br.PerSecond(), br.PerSecond(),
		or.PerSecond(), float64(or.P99)/1e6, 100*or.PerSecond()/bp.PerSecond(), bp.PerSecond())
}
