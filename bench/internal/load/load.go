// Package load is the small closed-loop HTTP load generator the benchmarks
// share: N connections each sending requests back to back for a duration,
// reporting throughput and latency percentiles.
package load

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Result of one run.
type Result struct {
	Requests int64
	Errors   int64
	Elapsed  time.Duration
	P50, P99 time.Duration
}

// PerSecond is the completed-request rate.
func (r Result) PerSecond() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

func (r Result) String() string {
	return fmt.Sprintf("%.0f req/s, p50 %.2f ms, p99 %.2f ms, %d requests, %d errors",
		r.PerSecond(), ms(r.P50), ms(r.P99), r.Requests, r.Errors)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Request builds one request; it is called per request.
type Request func() (*http.Request, error)

// Run drives conns connections for d against the requests from mk; a
// response with a status other than want counts as an error.
func Run(conns int, d time.Duration, want int, mk Request) Result {
	tr := &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	// Redirects are answers to measure, not to follow.
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var reqs, errs atomic.Int64
	lat := make([][]time.Duration, conns)
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for time.Now().Before(stop) {
				req, err := mk()
				if err != nil {
					errs.Add(1)
					continue
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					errs.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = append(lat[i], time.Since(t0))
				if resp.StatusCode != want {
					errs.Add(1)
				} else {
					reqs.Add(1)
				}
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	res := Result{Requests: reqs.Load(), Errors: errs.Load(), Elapsed: elapsed}
	if len(all) > 0 {
		res.P50 = all[len(all)/2]
		res.P99 = all[len(all)*99/100]
	}
	return res
}

// JSONRequest returns a Request posting or getting body with a bearer key.
func JSONRequest(method, url, key string, body []byte) Request {
	return func() (*http.Request, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequest(method, url, rd)
		if err != nil {
			return nil, err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		return req, nil
	}
}

// BareJSONServer starts a plain net/http server answering a small JSON body:
// the ceiling a Go HTTP service can reach on this machine.
func BareJSONServer() (url string, closeFn func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"em_0123456789abcdefghjkmnpqrs","status":"queued"}` + "\n"))
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }
}

// ProcessCPU is the user and system CPU time this process has used: the
// benches run the server in-process, so its difference over a run is the
// work (server and load generator), whatever the machine's load.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// StartCPUProfile profiles this process into path until the returned stop;
// with path "" it does nothing.
func StartCPUProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// StartMemProfile writes the allocations so far to path+".base" and, when
// stopped, all of them to path: go tool pprof -base path.base path shows
// the phase between ("" does nothing).
func StartMemProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	write := func(p string) {
		runtime.GC()
		if f, err := os.Create(p); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	write(path + ".base")
	return func() { write(path) }
}
