package dashboard_test

import (
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPages measures a signed-in page view end to end over loopback
// (session read, key authenticated again, the service's reads, render):
// the overview and a log page of 50 emails. cpu-ns/op is the whole
// process's CPU (client and server) per view.
//
//	go test -run XXX -bench Pages -benchtime 300x ./internal/dashboard
func BenchmarkPages(b *testing.B) {
	a := testapp.Start(b)
	for range 60 {
		if r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "Bench", "text": "x"}); r.Status != 200 {
			b.Fatalf("send %d", r.Status)
		}
	}
	v := newVisitor(b, a)
	v.signIn(a.Key)
	for name, path := range map[string]string{"overview": "/", "emails": "/emails"} {
		b.Run(name, func(b *testing.B) {
			req, _ := http.NewRequest("GET", a.URL+path, nil)
			start := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				res, err := v.c.Do(req)
				if err != nil || res.StatusCode != 200 {
					b.Fatalf("%v %v", err, res)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
