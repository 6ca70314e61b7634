// Command render measures what a template costs a send: POST /v1/emails
// with `template` (the published version of a 20 KB html template with 10
// variables, rendered at acceptance) beside the same send with its html
// given, in alternating slices of one run on one node, and reports the
// node's CPU per send for each (this process's CPU: node and load generator,
// the same generator for both).
//
//	go run ./bench/render                     # SQLite
//	go run ./bench/render -pg postgres://...  # PostgreSQL
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mailroom/bench/internal/benchnode"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"mailroom/bench/internal/load"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/render:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	pg := fs.String("pg", "", "PostgreSQL URL (default: SQLite in a temp dir)")
	conns := fs.Int("c", 16, "concurrent connections")
	dur := fs.Duration("d", 6*time.Second, "measured time of each kind of send (in slices)")
	slice := fs.Duration("slice", time.Second, "length of one slice")
	prof := fs.String("cpuprofile", "", "after the measurements, load template sends alone for -d more under the CPU profiler, writing to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mailroom-bench-render")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "mailroom.db")
	if *pg != "" {
		db = *pg
	}
	node, err := benchnode.Start(ctx, benchnode.Options{Dir: dir, Env: map[string]string{"MAILROOM_DATABASE_URL": db, "MAILROOM_SERVICE_DOMAIN": "bench.test"}})
	if err != nil {
		return err
	}
	defer node.Stop()
	a, key := node.App, node.Key
	base := "http://" + a.HTTPAddr()

	html, vars := template20KB()
	tplBody, _ := json.Marshal(map[string]any{"name": "Receipt", "subject": "Your receipt, {{v0}}", "html": html, "publish": true})
	resp, err := post(ctx, base+"/v1/templates", key, tplBody)
	if err != nil {
		return err
	}
	var tpl struct{ ID string }
	if err := json.Unmarshal(resp, &tpl); err != nil || tpl.ID == "" {
		return fmt.Errorf("creating the template: %s", resp)
	}
	// The plain send carries the same html, already rendered, so the two
	// differ only by the template's lookup and render.
	rendered, err := post(ctx, base+"/v1/templates/"+tpl.ID+"/render", key, mustJSON(map[string]any{"variables": vars}))
	if err != nil {
		return err
	}
	var r struct{ Subject, HTML string }
	json.Unmarshal(rendered, &r)
	common := map[string]any{"from": "Bench <onboarding@bench.test>", "to": []string{"delivered@bench.test"}, "tags": map[string]string{"kind": "receipt"}}
	// html only, as the template send stores it (delivery derives the text).
	plain := mustJSON(merge(common, map[string]any{"subject": r.Subject, "html": r.HTML}))
	small := mustJSON(merge(common, map[string]any{"subject": "Your receipt", "text": "Thanks for your order.", "html": "<p>Thanks for your order.</p>"}))
	withTpl := mustJSON(merge(common, map[string]any{"template": map[string]any{"id": tpl.ID, "variables": vars}}))

	target := base + "/v1/emails"
	kinds := []struct {
		name string
		body []byte
		cpu  time.Duration
		n    int64
		rate float64
	}{{name: "plain send (the same 20 KB html given)", body: plain}, {name: "template send (20 KB, 10 variables)", body: withTpl},
		{name: "small plain send (bench/send's body)", body: small}}
	for _, k := range kinds { // warm-up
		load.Run(*conns, time.Second/2, 200, load.JSONRequest("POST", target, key, k.body))
	}
	rounds := max(1, int(*dur / *slice))
	for i := range rounds {
		for j := range kinds {
			k := &kinds[(i+j)%len(kinds)] // rotate which goes first
			time.Sleep(200 * time.Millisecond)
			c0 := load.ProcessCPU()
			res := load.Run(*conns, *slice, 200, load.JSONRequest("POST", target, key, k.body))
			if res.Errors > 0 {
				return fmt.Errorf("%s: %d errors; a probe answered: %v", k.name, res.Errors, probe(ctx, target, key, k.body, *conns))
			}
			k.cpu += load.ProcessCPU() - c0
			k.n += res.Requests
			k.rate += res.PerSecond() / float64(rounds)
		}
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		load.Run(*conns, *dur, 200, load.JSONRequest("POST", target, key, withTpl))
		pprof.StopCPUProfile()
	}
	per := func(i int) time.Duration { return kinds[i].cpu / time.Duration(max(kinds[i].n, 1)) }
	for i, k := range kinds {
		fmt.Fprintf(out, "%-38s %8.0f sends/s  CPU %v per send\n", k.name, k.rate, per(i).Round(100*time.Nanosecond))
	}
	fmt.Fprintf(out, "template send: %+.1f%% CPU per send over the same content sent plain, %+.1f%% over the small plain send\n",
		(float64(per(1))/float64(per(0))-1)*100, (float64(per(1))/float64(per(2))-1)*100)
	return nil
}

// template20KB is a receipt-like html template of about 20 KB using ten
// variables, and values for them.
func template20KB() (string, map[string]any) {
	var b strings.Builder
	b.WriteString("<html><body><h1>Hello {{v0}}</h1>")
	for i := 0; b.Len() < 20<<10; i++ {
		fmt.Fprintf(&b, `<tr><td style="padding:4px;font-family:Arial,sans-serif">Line %d of your order, shipped to {{v%d}}.</td><td>{{v%d}}</td></tr>`, i, i%10, (i+3)%10)
	}
	b.WriteString("</body></html>")
	vars := map[string]any{}
	for i := range 10 {
		vars[fmt.Sprintf("v%d", i)] = fmt.Sprintf("value <%d> & more", i)
	}
	return b.String(), vars
}

// probe repeats the send from conns goroutines and answers the first
// failure, to name what load.Run only counted.
func probe(ctx context.Context, url, key string, body []byte, conns int) error {
	errs := make(chan error, conns)
	for range conns {
		go func() {
			for range 50 {
				if _, err := post(ctx, url, key, body); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range conns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func post(ctx context.Context, url, key string, body []byte) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s: %d %s", url, resp.StatusCode, b)
	}
	return b, err
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
