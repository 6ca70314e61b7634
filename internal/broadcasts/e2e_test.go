package broadcasts_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

type (
	sc    = scenario.Case
	shape = scenario.Shape
)

const sandbox = "Acme News <onboarding@mailroom.test>"

func start(t *testing.T, sink *smtpsink.Sink) *testapp.App {
	return testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()))
}

func mustStatus(t *testing.T, r *testapp.Response, want int) map[string]any {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r.JSON()
}

// audience makes an audience of n members (member i has plan p<i%3>),
// returning its id.
func audience(t *testing.T, a *testapp.App, n int, extra ...map[string]any) string {
	t.Helper()
	aud := mustStatus(t, a.Do(http.MethodPost, "/v1/audiences", map[string]any{"name": fmt.Sprint("News ", time.Now().UnixNano())}), 201)["id"].(string)
	for start := 0; start < n; start += 5000 {
		var rows []any
		for i := start; i < min(n, start+5000); i++ {
			rows = append(rows, map[string]any{"email": fmt.Sprintf("m%05d@example.net", i),
				"attributes": map[string]any{"plan": fmt.Sprint("p", i%3), "first_name": fmt.Sprint("Name", i)}})
		}
		if start == 0 {
			for _, e := range extra {
				rows = append(rows, e)
			}
		}
		mustStatus(t, a.Do(http.MethodPost, "/v1/audiences/"+aud+"/contacts", rows), 201)
	}
	return aud
}

func TestBroadcastEndToEnd(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	mustStatus(t, a.Do(http.MethodPost, "/v1/suppressions", map[string]any{"email": "gone@example.net"}), 201)
	aud := audience(t, a, 20,
		map[string]any{"email": "gone@example.net", "attributes": map[string]any{"plan": "p0"}},
		map[string]any{"email": "left@example.net", "subscribed": false, "attributes": map[string]any{"plan": "p0"}})
	empty := mustStatus(t, a.Do(http.MethodPost, "/v1/audiences", map[string]any{"name": "Empty"}), 201)["id"].(string)

	s := scenario.New(a)
	s.Set("other", otherKey)
	s.Set("aud", aud)
	s.Set("empty", empty)
	html := `<p>Hello {{ first_name }}, your plan is {{ plan }}.</p>` + strings.Repeat("<p>news</p>", 50)
	s.Run(t,
		sc{Name: "from is required", Method: "POST", Path: "/v1/broadcasts", Body: map[string]any{"subject": "x"}, Status: 400, Code: "invalid_request"},
		sc{Name: "from must parse", Method: "POST", Path: "/v1/broadcasts", Body: map[string]any{"from": "not an address"}, Status: 400, Code: "invalid_request"},
		sc{Name: "bare draft lists what is missing", Method: "POST", Path: "/v1/broadcasts", Body: map[string]any{"from": "news@unverified.example"},
			Status: 201, Shape: shape{"id": scenario.Prefix("bc_"), "status": "draft", "ready": false,
				"problems": scenario.Each(shape{"code": scenario.Present, "message": scenario.Present})},
			Check: problemCodes("no_audience", "no_subject", "no_body", "from_domain_not_verified"), Save: map[string]string{"bare": "id"}},
		sc{Name: "empty audience and unknown field", Method: "POST", Path: "/v1/broadcasts", Body: map[string]any{"from": sandbox, "audience_id": "{empty}",
			"subject": "Hi", "html": "{{ shoe_size }}"}, Status: 201, Shape: shape{"ready": false}, Check: problemCodes("empty_audience"),
			Save: map[string]string{"emptybc": "id"}},
		sc{Name: "not ready: send refused", Method: "POST", Path: "/v1/broadcasts/{bare}/send", Status: 422, Code: "broadcast_not_ready"},
		sc{Name: "create", Method: "POST", Path: "/v1/broadcasts", Body: map[string]any{"from": sandbox, "audience_id": "{aud}", "subject": "News for {{ first_name }}",
			"html": html}, Status: 201, Shape: shape{"status": "draft", "ready": true, "problems": scenario.Len(0)}, Save: map[string]string{"bc": "id"}},
		sc{Name: "from is not patchable", Method: "PATCH", Path: "/v1/broadcasts/{bc}", Body: map[string]any{"from": "x@y.z"}, Status: 400, Code: "invalid_request"},
		sc{Name: "patch a draft", Method: "PATCH", Path: "/v1/broadcasts/{bc}", Body: map[string]any{"name": "November"}, Status: 200,
			Shape: shape{"name": "November", "ready": true, "stats": shape{"total": 0}}},
		sc{Name: "preview for a member", Method: "GET", Path: "/v1/broadcasts/{bc}/preview?email=m00004@example.net", Status: 200,
			Shape: shape{"subject": "News for Name4", "merge_fields": scenario.Present, "audience_sample_size": 20},
			Check: bodyHas("html", "your plan is p1")},
		sc{Name: "preview for a member written otherwise", Method: "GET", Path: "/v1/broadcasts/{bc}/preview?email=M00007@Example.NET", Status: 200,
			Shape: shape{"subject": "News for Name7"}},
		sc{Name: "preview for the first member", Method: "GET", Path: "/v1/broadcasts/{bc}/preview", Status: 200,
			Shape: shape{"audience_sample_size": 20}, Check: bodyHas("html", "Hello Name")},
		sc{Name: "preview for a non-address", Method: "GET", Path: "/v1/broadcasts/{bc}/preview?email=nobody", Status: 404, Code: "not_found"},
		sc{Name: "preview of a stranger", Method: "GET", Path: "/v1/broadcasts/{bc}/preview?email=nobody@example.net", Status: 404, Code: "not_found"},
		sc{Name: "ad-hoc preview writes nothing", Method: "POST", Path: "/v1/broadcasts/preview", Body: map[string]any{"subject": "Hi {{ first_name }}",
			"text": "plan {{ plan }}", "audienceId": "{aud}"}, Status: 200, Shape: shape{"id": nil, "audience_sample_size": 20, "headers": scenario.Present}},
		sc{Name: "ad-hoc preview needs a subject", Method: "POST", Path: "/v1/broadcasts/preview", Body: map[string]any{"text": "x"}, Status: 400, Code: "invalid_request"},
		sc{Name: "test to six", Method: "POST", Path: "/v1/broadcasts/{bc}/test", Body: map[string]any{"to": []any{"a@x.io", "b@x.io", "c@x.io", "d@x.io", "e@x.io", "f@x.io"}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "test to one", Method: "POST", Path: "/v1/broadcasts/{bc}/test", Body: map[string]any{"to": "tester@example.org"}, Status: 200,
			Shape: shape{"sent": 1, "skipped": scenario.Len(0)}},
		sc{Name: "still a draft", Method: "GET", Path: "/v1/broadcasts/{bc}", Status: 200, Shape: shape{"status": "draft"}},
		sc{Name: "schedule in the past", Method: "POST", Path: "/v1/broadcasts/{bc}/send", Body: map[string]any{"scheduled_at": "2001-01-01T00:00:00Z"}, Status: 400, Code: "invalid_request"},
		sc{Name: "schedule too far", Method: "POST", Path: "/v1/broadcasts/{bc}/send", Body: map[string]any{"scheduled_at": time.Now().Add(31 * 24 * time.Hour).Format(time.RFC3339)},
			Status: 400, Code: "invalid_request"},
		sc{Name: "another workspace", Method: "POST", Path: "/v1/broadcasts/{bc}/send", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "send now", Method: "POST", Path: "/v1/broadcasts/{bc}/send", Status: 200,
			Shape: shape{"status": "sending", "queued": 20, "skipped": 2, "recipients": 22, "batches": 1}},
		sc{Name: "past draft: no patch", Method: "PATCH", Path: "/v1/broadcasts/{bc}", Body: map[string]any{"name": "x"}, Status: 409, Code: "broadcast_not_draft"},
		sc{Name: "past draft: no second send", Method: "POST", Path: "/v1/broadcasts/{bc}/send", Status: 409, Code: "broadcast_not_draft"},
		sc{Name: "list", Method: "GET", Path: "/v1/broadcasts?limit=2", Status: 200, Shape: shape{"broadcasts": scenario.Len(2), "has_more": true}},
	)
	bc := s.Get("bc")
	msgs := sink.WaitFor(21, 20*time.Second) // the test send and 20 members
	var personal int
	for _, m := range msgs {
		d := string(m.Data)
		if strings.Contains(d, "Subject: News for Name") && strings.Contains(d, "List-Unsubscribe-Post: List-Unsubscribe=One-Click") {
			personal++
		}
		if strings.Contains(strings.Join(m.To, ","), "gone@") || strings.Contains(strings.Join(m.To, ","), "left@") {
			t.Errorf("mail reached a suppressed or unsubscribed member: %v", m.To)
		}
	}
	if personal != 20 {
		t.Fatalf("%d personalised broadcast messages with unsubscribe headers, want 20", personal)
	}
	// The header's https link is the topics area's signed one-click link:
	// its page opens, and the one-click POST answers 200.
	var link string
	for _, m := range msgs {
		if msg, err := mail.ReadMessage(bytes.NewReader(m.Data)); err == nil {
			if v := msg.Header.Get("List-Unsubscribe"); strings.Contains(v, "/unsubscribe/") {
				link = a.URL + strings.TrimPrefix(regexp.MustCompile(`<(https?://[^>]+)>`).FindStringSubmatch(v)[1], a.Config.PublicURL)
				break
			}
		}
	}
	if link == "" {
		t.Fatal("no broadcast message carried an https List-Unsubscribe link")
	}
	for _, req := range []struct{ method, body string }{{"GET", ""}, {"POST", "List-Unsubscribe=One-Click"}} {
		r, err := http.NewRequest(req.method, link, strings.NewReader(req.body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || strings.Contains(string(page), "not valid") {
			t.Fatalf("%s %s: %d\n%s", req.method, link, res.StatusCode, page)
		}
	}
	testapp.Eventually(t, 20*time.Second, func() bool {
		r := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)
		st := r["stats"].(map[string]any)
		return r["status"] == "sent" && st["delivered"] == float64(20)
	}, "broadcast never reached sent with 20 delivered")
	s.Run(t,
		sc{Name: "skipped recipients with reasons", Method: "GET", Path: "/v1/broadcasts/{bc}/recipients?status=skipped", Status: 200,
			Shape: shape{"recipients": scenario.Len(2), "stats": shape{"total": 22, "delivered": 20, "skipped": 2}}, Check: bodyHas("recipients", "suppressed", "unsubscribed")},
		sc{Name: "recipients page", Method: "GET", Path: "/v1/broadcasts/{bc}/recipients?limit=5", Status: 200,
			Shape: shape{"recipients": scenario.Len(5), "has_more": true, "next_after": scenario.Present}, Save: map[string]string{"next": "next_cursor"}},
		sc{Name: "recipients next page", Method: "GET", Path: "/v1/broadcasts/{bc}/recipients?limit=500&cursor={next}", Status: 200,
			Shape: shape{"recipients": scenario.Len(17), "has_more": false}},
		sc{Name: "bad status filter", Method: "GET", Path: "/v1/broadcasts/{bc}/recipients?status=lost", Status: 400, Code: "invalid_request"},
		sc{Name: "limit over 500", Method: "GET", Path: "/v1/broadcasts/{bc}/recipients?limit=501", Status: 422, Code: "invalid_limit"},
		sc{Name: "a sent broadcast cannot be cancelled", Method: "POST", Path: "/v1/broadcasts/{bc}/cancel", Status: 409, Code: "broadcast_not_cancellable"},
	)
}

func TestScheduledBroadcastCancel(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 3)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "S", "text": "T"}), 201)["id"].(string)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	r := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", map[string]any{"scheduled_at": at.Format(time.RFC3339)}), 200)
	if r["status"] != "scheduled" || r["scheduled_at"] != at.Format(time.RFC3339) {
		t.Fatalf("scheduled send answered %v", r)
	}
	r = mustStatus(t, a.Do(http.MethodDelete, "/v1/broadcasts/"+bc, nil), 200)
	if r["status"] != "cancelled" {
		t.Fatalf("cancel answered %v", r)
	}
	if err := a.Broadcasts().FanOut(t.Context(), a.WorkspaceID, bc); err != nil {
		t.Fatal(err)
	}
	if n := sink.Count(); n != 0 {
		t.Fatalf("%d messages went out for a cancelled broadcast", n)
	}
}

// TestTransactionalDuringBroadcast: a send accepted while a broadcast of
// 3,000 goes out (through a sink slowed to 4 ms a message) reaches the
// sink within 2 seconds, because marketing has its own lane.
func TestTransactionalDuringBroadcast(t *testing.T) {
	if testing.Short() {
		t.Skip("a broadcast of 3,000")
	}
	var mu sync.Mutex
	var trans time.Time
	sink := smtpsink.Start(t, smtpsink.WithHandler(func(from string, to []string, data []byte) error {
		if strings.Contains(string(data), "Subject: Password reset") {
			mu.Lock()
			trans = time.Now()
			mu.Unlock()
			return nil
		}
		time.Sleep(4 * time.Millisecond)
		return nil
	}))
	a := start(t, sink)
	aud := audience(t, a, 3000)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Big", "html": "<p>{{ first_name }}</p>"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	testapp.Eventually(t, 30*time.Second, func() bool { return sink.Count() >= 300 }, "the broadcast never got going")
	accepted := time.Now()
	mustStatus(t, a.Do(http.MethodPost, "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "owner@example.com",
		"subject": "Password reset", "text": "code 1234"}), 200)
	testapp.Eventually(t, 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return !trans.IsZero() }, "the transactional send never arrived")
	mu.Lock()
	took := trans.Sub(accepted)
	mu.Unlock()
	left := 3000 - sink.Count()
	t.Logf("transactional send reached the sink %v after acceptance, with about %d broadcast messages still to go", took.Round(time.Millisecond), left)
	if took > 2*time.Second {
		t.Fatalf("transactional send took %v during the broadcast (limit 2s)", took)
	}
	if left <= 0 {
		t.Fatalf("the broadcast had finished; the test proves nothing")
	}
}

func problemCodes(want ...string) func(t testing.TB, r *testapp.Response) {
	return func(t testing.TB, r *testapp.Response) {
		got := map[string]bool{}
		for _, p := range r.JSON()["problems"].([]any) {
			got[p.(map[string]any)["code"].(string)] = true
		}
		for _, w := range want {
			if !got[w] {
				t.Errorf("problems lack %s: %s", w, r.Body)
			}
		}
	}
}

func bodyHas(field string, subs ...string) func(t testing.TB, r *testapp.Response) {
	return func(t testing.TB, r *testapp.Response) {
		for _, s := range subs {
			if !strings.Contains(string(r.Body), s) {
				t.Errorf("%s lacks %q: %s", field, s, r.Body)
			}
		}
	}
}

// TestCancelMidBroadcast: once a cancel is answered, only the messages
// delivery was already sending reach the server; every other recipient is
// skipped (cancelled).
func TestCancelMidBroadcast(t *testing.T) {
	sink := smtpsink.Start(t, smtpsink.WithHandler(func(string, []string, []byte) error {
		time.Sleep(5 * time.Millisecond)
		return nil
	}))
	a := start(t, sink)
	aud := audience(t, a, 1000)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "S", "text": "T"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	testapp.Eventually(t, 20*time.Second, func() bool { return sink.Count() >= 50 }, "the broadcast never got going")
	r := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/cancel", nil), 200)
	atCancel := sink.Count()
	if r["status"] != "cancelled" {
		t.Fatalf("cancel answered %v", r)
	}
	var st map[string]any
	testapp.Eventually(t, 10*time.Second, func() bool {
		st = mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["stats"].(map[string]any)
		return st["sent"] == float64(0) && st["pending"] == float64(0)
	}, "recipients still in flight after the cancel")
	after := sink.Count()
	t.Logf("%d at the sink when the cancel was answered, %d in the end; stats %v", atCancel, after, st)
	// At most the marketing lane's slots (the default 64) were mid-send.
	if after-atCancel > 64 {
		t.Fatalf("%d messages reached the server after the cancel was answered", after-atCancel)
	}
	if int(st["delivered"].(float64)) != after || int(st["delivered"].(float64)+st["skipped"].(float64)) != 1000 {
		t.Fatalf("stats %v do not add up with %d at the sink", st, after)
	}
	r = mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc+"/recipients?status=skipped&limit=1", nil), 200)
	if rs := r["recipients"].([]any); len(rs) != 1 || rs[0].(map[string]any)["reason"] != "cancelled" {
		t.Fatalf("skipped recipient %v", rs)
	}
}

// TestBroadcastTopicOptOut: a broadcast with a topic skips the members who
// switched it off (topic on by default) or never switched it on (off by
// default), with the reason topic_opt_out; topic_id takes a key (stored
// as the id) and an unknown one is a problem that stops the send. The
// segment rule topic counts the same people.
func TestBroadcastTopicOptOut(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 4)
	news := mustStatus(t, a.Do(http.MethodPost, "/v1/topics", map[string]any{"name": "News", "key": "news"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/topics", map[string]any{"name": "Beta", "key": "beta", "default_opt_in": false}), 201)
	mustStatus(t, a.Do(http.MethodPost, "/v1/topics/preferences", map[string]any{"email": "m00001@example.net", "topic": "news", "subscribed": false}), 200)
	mustStatus(t, a.Do(http.MethodPost, "/v1/topics/preferences", map[string]any{"email": "M00002@example.net", "topic": "beta", "subscribed": true}), 200)

	s := scenario.New(a)
	s.Set("aud", aud)
	s.Set("news", news)
	s.Run(t,
		sc{Name: "unknown topic is a problem", Method: "POST", Path: "/v1/broadcasts", Body: map[string]any{"from": sandbox, "audience_id": "{aud}",
			"topic_id": "no-such-topic", "subject": "S", "text": "T"}, Status: 201, Shape: shape{"ready": false},
			Check: problemCodes("unknown_topic"), Save: map[string]string{"lost": "id"}},
		sc{Name: "unknown topic: send refused", Method: "POST", Path: "/v1/broadcasts/{lost}/send", Status: 422, Code: "broadcast_not_ready"},
		sc{Name: "topic by key is stored as its id", Method: "PATCH", Path: "/v1/broadcasts/{lost}", Body: map[string]any{"topic_id": "news"},
			Status: 200, Shape: shape{"ready": true, "topic_id": scenario.Var("news")}},
		sc{Name: "send skips the opted-out member", Method: "POST", Path: "/v1/broadcasts/{lost}/send", Status: 200,
			Shape: shape{"queued": 3, "skipped": 1, "recipients": 4}},
		sc{Name: "the skip names the topic", Method: "GET", Path: "/v1/broadcasts/{lost}/recipients?status=skipped", Status: 200,
			Shape: shape{"recipients": scenario.Each(shape{"email": "m00001@example.net", "reason": "topic_opt_out"})}},
		sc{Name: "a topic off by default reaches only who opted in", Method: "POST", Path: "/v1/broadcasts", Body: map[string]any{"from": sandbox,
			"audience_id": "{aud}", "topic_id": "beta", "subject": "Beta", "text": "T"}, Status: 201, Shape: shape{"ready": true}, Save: map[string]string{"beta": "id"}},
		sc{Name: "beta send", Method: "POST", Path: "/v1/broadcasts/{beta}/send", Status: 200, Shape: shape{"queued": 1, "skipped": 3}},
		// The segment rule `topic` reads the same opt-outs.
		sc{Name: "segment of who left news", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "Left news", "audience_id": "{aud}",
			"rules": []any{map[string]any{"field": "topic", "op": "not_subscribed", "value": "news"}}}, Status: 201, Shape: shape{"member_count": 1}},
		sc{Name: "segment of beta readers, by id", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "Beta readers",
			"rules": []any{map[string]any{"field": "topic", "op": "subscribed", "value": "beta"}, map[string]any{"field": "topic", "op": "subscribed", "value": "{news}"}}},
			Status: 201, Shape: shape{"member_count": 1}},
		sc{Name: "segment of an unknown topic's readers", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "All",
			"audience_id": "{aud}", "rules": []any{map[string]any{"field": "topic", "op": "subscribed", "value": "nope"}}}, Status: 201, Shape: shape{"member_count": 4}},
	)
	msgs := sink.WaitFor(4, 20*time.Second)
	// Once every recipient of both broadcasts has its outcome, what reached
	// the server is all that will: four messages and nothing else.
	for _, bc := range []string{s.Get("lost"), s.Get("beta")} {
		testapp.Eventually(t, 20*time.Second, func() bool {
			st := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["stats"].(map[string]any)
			return st["sent"] == float64(0) && st["pending"] == float64(0)
		}, "recipients of %s still in flight", bc)
	}
	if n := sink.Count(); n != 4 {
		t.Fatalf("%d messages at the sink, want 4", n)
	}
	for _, m := range msgs {
		to := strings.Join(m.To, ",")
		beta := strings.Contains(string(m.Data), "Subject: Beta")
		if (!beta && to == "m00001@example.net") || (beta && to != "m00002@example.net") {
			t.Errorf("a message reached %s, who is opted out (beta %v)", to, beta)
		}
	}
}
