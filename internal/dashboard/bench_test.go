package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
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

// BenchmarkLaterPages measures what the later areas do most often: the
// template editor's live preview (a POST of the form as typed, rendered by
// the template renderer; the script sends one per pause in typing), and a
// broadcast's page with its member preview and first 50 recipients (it
// reloads every 2 seconds while the broadcast goes out) over an audience
// of 1,000 members.
//
//	go test -run XXX -bench LaterPages -benchtime 300x ./internal/dashboard
func BenchmarkLaterPages(b *testing.B) {
	a := testapp.Start(b)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "Bench"}).JSON()["id"].(string)
	var rows []any
	for i := range 1000 {
		rows = append(rows, map[string]any{"email": fmt.Sprintf("m%04d@example.net", i), "attributes": map[string]any{"first_name": fmt.Sprint("Name", i)}})
	}
	if r := a.Do("POST", "/v1/audiences/"+aud+"/contacts", rows); r.Status != 201 {
		b.Fatalf("import %d %s", r.Status, r.Body)
	}
	bc := a.Do("POST", "/v1/broadcasts", map[string]any{"from": "onboarding@mailroom.test", "audience_id": aud, "subject": "Hi {{ first_name }}",
		"html": "<h1>Hello {{ first_name }}</h1><p>" + strings.Repeat("News of the month. ", 200) + "</p>"}).JSON()["id"].(string)
	v := newVisitor(b, a)
	v.signIn(a.Key)
	v.get("/templates/new")
	form := url.Values{"csrf": {v.csrf}, "subject": {"Hi {{ first_name }}"}, "variables": {"first_name=there"},
		"html": {"<h1>Hello {{ first_name }}</h1>{{#if plan}}<p>Your plan: {{ plan }}</p>{{/if}}<p>" + strings.Repeat("News of the month. ", 200) + "</p>"}}.Encode()
	for name, mk := range map[string]func() *http.Request{
		"live-preview": func() *http.Request {
			req, _ := http.NewRequest("POST", a.URL+"/templates/preview", strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return req
		},
		"broadcast-member-preview": func() *http.Request {
			req, _ := http.NewRequest("GET", a.URL+"/broadcasts/"+bc+"?member=m0999@example.net", nil)
			return req
		},
	} {
		b.Run(name, func(b *testing.B) {
			start := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				res, err := v.c.Do(mk())
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
