package inbound_test

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// TestSearch: GET /v1/search finds received mail by subject, body (text,
// or html when there is no text), names, addresses and attachment names,
// ranks a subject hit above a body hit, cuts an excerpt from the body,
// never errors on FTS syntax, and keeps a bound key to its mailbox.
func TestSearch(t *testing.T) {
	a, inbox := startSMTP(t)
	_, host, _ := strings.Cut(inbox, "@")
	s := scenario.New(a)
	s.Run(t,
		sc{Name: "support", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"local_part": "support"}, Status: 201, Save: map[string]string{"support": "id"}},
		sc{Name: "bound key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "s", "mailbox_id": "{support}"}, Status: 201, Save: map[string]string{"bound": "key"}},
	)
	support := "support@" + host
	mails := []struct{ to, from, subject, extra, body string }{
		{inbox, "Quentin Quokka <q@island.example>", "Invoice 2026-11", "", "Please find the invoice attached. Payment is due in thirty days."},
		{inbox, "ann@sender.example", "Lunch", "", "Shall we talk about the invoice over lunch? The weather on the island is lovely and the ferry leaves at noon."},
		{inbox, "bob@sender.example", "html only", "Content-Type: text/html\r\n", "<p>The <b>pelican</b> &amp; the heron</p><style>.x{}</style>"},
		{inbox, "carol@sender.example", "with attachment", "Content-Type: multipart/mixed; boundary=b\r\n",
			"--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"wombat-report.pdf\"\r\n\r\n%PDF\r\n--b--\r\n"},
		{support, "dave@other.example", "Invoice for support", "", "The support invoice. Secret support text."},
	}
	for _, m := range mails {
		raw := "From: " + m.from + "\r\nTo: Inbox Person <" + m.to + ">\r\nSubject: " + m.subject + "\r\n" + m.extra + "\r\n" + m.body + "\r\n"
		if err := send(t, a.SMTPAddr(), "sender@sender.example", []string{m.to}, raw); err != nil {
			t.Fatal(err)
		}
	}

	type hit struct {
		MessageID string `json:"message_id"`
		ThreadID  string `json:"thread_id"`
		Subject   string
		Excerpt   string
		Mailbox   string
		Score     float64
	}
	search := func(key, q string) []hit {
		t.Helper()
		r := a.DoKey(key, "GET", "/v1/search?q="+url.QueryEscape(q), nil)
		if r.Status != 200 {
			t.Fatalf("q=%q: %d %s", q, r.Status, r.Body)
		}
		var out struct{ Hits []hit }
		r.Decode(t, &out)
		return out.Hits
	}
	subjects := func(hs []hit) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Subject)
		}
		return out
	}

	// A subject hit ranks above a body hit; a bound key sees only its mailbox.
	if got := subjects(search(a.Key, "invoice")); !slices.Equal(got[:2], []string{"Invoice 2026-11", "Invoice for support"}) && !slices.Equal(got[:2], []string{"Invoice for support", "Invoice 2026-11"}) || len(got) != 3 || got[2] != "Lunch" {
		t.Errorf("invoice: %v", got)
	}
	if got := subjects(search(s.Get("bound"), "invoice")); !slices.Equal(got, []string{"Invoice for support"}) {
		t.Errorf("bound key: %v", got)
	}
	if got := search(s.Get("bound"), "quokka"); len(got) != 0 {
		t.Errorf("bound key sees another mailbox: %v", got)
	}
	for q, want := range map[string]string{
		"quokka":             "Invoice 2026-11", // sender's name
		"island.example":     "Lunch",           // address words, ANDed: island (body of Lunch) ... see below
		"PELICAN heron":      "html only",       // html body, case folded
		"wombat":             "with attachment", // attachment name
		"q@island.example":   "Invoice 2026-11", // a whole address
		"2026":               "Invoice 2026-11", // digits
		"ferry noon":         "Lunch",           // every word, anywhere in the body
		"\"invoice attached": "Invoice 2026-11", // stray quote
		"inbox person lunch": "Lunch",           // recipient's name from the To header
	} {
		got := subjects(search(a.Key, q))
		if q == "island.example" {
			// island is in Quentin's address and in Lunch's body, example in both.
			slices.Sort(got)
			if !slices.Equal(got, []string{"Invoice 2026-11", "Lunch"}) {
				t.Errorf("q=%q: %v", q, got)
			}
			continue
		}
		if !slices.Contains(got, want) {
			t.Errorf("q=%q: %v, want %q among them", q, got, want)
		}
	}
	// The excerpt is plain text from the body around the words.
	if hs := search(a.Key, "ferry"); len(hs) != 1 || !strings.Contains(hs[0].Excerpt, "ferry") || strings.Contains(hs[0].Excerpt, "<") || hs[0].MessageID == "" || hs[0].ThreadID == "" || hs[0].Mailbox != inbox {
		t.Errorf("ferry: %+v", hs)
	}
	// FTS operators and quotes are words or separators, never syntax.
	for _, q := range []string{`"`, `""`, `invoice"`, `NEAR(a b)`, `a OR b`, `a AND`, `NOT x`, `-invoice`, `inv*`, `^x`, `col:val`, `subject:invoice`,
		`(`, `)`, `a & b | !c`, `'`, `x:*`, `\`, `%_`, `{}[]`, "\x00", "\xff\xfe", strings.Repeat("word ", 500), strings.Repeat("x", 5000), "日本語", "café"} {
		search(a.Key, q)
	}
	if got := subjects(search(a.Key, `NOT invoice`)); len(got) != 0 && !slices.Contains(got, "Invoice 2026-11") {
		t.Errorf("NOT is a word: %v", got)
	}
	s.Run(t,
		sc{Name: "q required", Method: "GET", Path: "/v1/search", Status: 400, Code: "invalid_request"},
		sc{Name: "blank q", Method: "GET", Path: "/v1/search?q=%20", Status: 400, Code: "invalid_request"},
		sc{Name: "punctuation only", Method: "GET", Path: "/v1/search?q=%22%2A", Status: 200, Shape: shape{"hits": scenario.Len(0)}},
		sc{Name: "limit", Method: "GET", Path: "/v1/search?q=invoice&limit=1", Status: 200, Shape: shape{"hits": scenario.Len(1)}},
		sc{Name: "limit max 50", Method: "GET", Path: "/v1/search?q=invoice&limit=51", Status: 422, Code: "invalid_limit"},
		sc{Name: "limit 50", Method: "GET", Path: "/v1/search?q=invoice&limit=50", Status: 200},
		sc{Name: "bound: other mailbox", Method: "GET", Path: "/v1/search?q=invoice&mailbox_id=" + "{support}", Key: "{bound}", Status: 200, Shape: shape{"hits": scenario.Len(1)}},
	)
}

// TestSearchRanking: hits come best first (a subject hit above body hits;
// in the body, more occurrences and then a shorter text rank higher),
// equal ranks newest first, each with an excerpt around the word cut from
// the body. The messages are stored through inbound.Service.Seed.
func TestSearchRanking(t *testing.T) {
	c := clock.NewFake(time.Now())
	a, inbox := startSMTP(t, testapp.WithClock(c))
	mbs, err := a.Inbound().Mailboxes(t.Context(), a.WorkspaceID, "")
	if err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("the harbour was quiet that morning and ", 8)
	for _, m := range []struct{ subject, body string }{
		{"kestrel sighting", "nothing about birds here"},
		{"long", filler + "a kestrel " + filler},
		{"three", "kestrel kestrel kestrel"},
		{"short", "a kestrel"},
		{"twin 1", "osprey"},
		{"twin 2", "osprey"},
	} {
		c.Advance(time.Second)
		raw := "From: p@sender.example\r\nTo: " + inbox + "\r\nSubject: " + m.subject + "\r\n\r\n" + m.body + "\r\n"
		if err := a.Inbound().Seed(t.Context(), &mbs[0], [][]byte{[]byte(raw)}); err != nil {
			t.Fatal(err)
		}
	}
	var out struct {
		Hits []struct {
			Subject, Excerpt string
			Score            float64
		}
	}
	a.Do("GET", "/v1/search?q=Kestrel", nil).Decode(t, &out)
	var got []string
	for _, h := range out.Hits {
		got = append(got, h.Subject)
	}
	if !slices.Equal(got, []string{"kestrel sighting", "three", "short", "long"}) {
		t.Fatalf("kestrel ranked %v", got)
	}
	for i, h := range out.Hits {
		if i > 0 && h.Score > out.Hits[i-1].Score {
			t.Errorf("scores not descending: %+v", out.Hits)
		}
	}
	if ex := out.Hits[3].Excerpt; !strings.HasPrefix(ex, "…") || !strings.HasSuffix(ex, "…") || !strings.Contains(ex, "a kestrel the harbour") {
		t.Errorf("long's excerpt: %q", ex)
	}
	a.Do("GET", "/v1/search?q=osprey", nil).Decode(t, &out)
	if len(out.Hits) != 2 || out.Hits[0].Subject != "twin 2" || out.Hits[1].Subject != "twin 1" {
		t.Errorf("equal ranks: %+v", out.Hits)
	}
}

// TestSearchRankedHasMore: a ranked list answers has_more with next_cursor
// null (a larger limit shows more), and refuses a cursor with 422.
func TestSearchRankedHasMore(t *testing.T) {
	a, inbox := startSMTP(t)
	for _, subject := range []string{"pelican one", "pelican two", "pelican three"} {
		raw := "From: ann@sender.example\r\nTo: " + inbox + "\r\nSubject: " + subject + "\r\n\r\nabout birds\r\n"
		if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{inbox}, raw); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		limit, hits int
		more        bool
	}{{2, 2, true}, {3, 3, false}, {50, 3, false}} {
		r := a.Do("GET", "/v1/search?q=pelican&limit="+strconv.Itoa(c.limit), nil)
		m := r.JSON()
		if r.Status != 200 || len(m["hits"].([]any)) != c.hits || m["has_more"] != c.more || m["next_cursor"] != nil {
			t.Errorf("limit %d: %d %s", c.limit, r.Status, r.Body)
		}
		if _, ok := m["next_cursor"]; !ok {
			t.Errorf("limit %d: next_cursor absent: %s", c.limit, r.Body)
		}
	}
	if r := a.Do("GET", "/v1/search?q=pelican&cursor=abc", nil); r.Status != 422 || r.ErrCode() != "invalid_cursor" {
		t.Errorf("cursor: %d %s", r.Status, r.Body)
	}
}
