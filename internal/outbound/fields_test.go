package outbound

import (
	"bytes"
	"strings"
	"testing"
	"time"

	nettextproto "net/textproto"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"
)

// FuzzFieldsMatchTextproto holds fields to go-message's header: the same
// operations (ops picks each, the values come from vals) write the same
// bytes, a field WriteHeader refuses included.
func FuzzFieldsMatchTextproto(f *testing.F) {
	long := "List-Unsubscribe <https://x.test/u/" + strings.Repeat("t", 90) + "> and  more\twords " + strings.Repeat("w ", 60)
	for _, s := range []struct{ ops, vals string }{
		{"sssdsr", "From|<a@x.test>|to|<b@y.test>|subject|=?utf-8?q?caf=C3=A9?=|x-a|v\r\n |  Subject  : raw\r\n"},
		{"ssss", "X-Long|" + long + "|Date|Mon, 02 Jan 2006 15:04:05 -0700|Message-ID|<id@x>|x-long|" + strings.Repeat("z", 1200)},
		{"ssd", "Bad Key|v|ok|line\nbreak|bad key|"},
		{"sS", "K|\n\n\n|feedback-id|a:b:c"},
		{"srs", "a|b|c: d\r\n|" + strings.Repeat("k", 80) + "|" + strings.Repeat("v", 100)},
	} {
		f.Add(s.ops, s.vals)
	}
	f.Fuzz(func(t *testing.T, ops, vals string) {
		var want textproto.Header
		var got fields
		v := strings.Split(vals, "|")
		next := func() string {
			if len(v) == 0 {
				return ""
			}
			s := v[0]
			v = v[1:]
			return s
		}
		for _, op := range ops {
			switch op {
			case 's', 'S':
				k, val := next(), next()
				if k == "" {
					continue
				}
				want.Set(k, val)
				got.Set(k, val)
			case 'd':
				k := next()
				want.Del(k)
				got.Del(k)
			case 'r':
				kv := next()
				if !strings.Contains(kv, ":") {
					continue
				}
				want.AddRaw([]byte(kv))
				got.AddRaw([]byte(kv))
			}
		}
		var wb bytes.Buffer
		panicked := func(fn func()) (p bool) {
			defer func() { p = recover() != nil }()
			fn()
			return false
		}
		var gb []byte
		wp := panicked(func() { _ = textproto.WriteHeader(&wb, want) })
		gp := panicked(func() { gb = got.appendTo(nil) })
		if wp != gp || !wp && !bytes.Equal(gb, wb.Bytes()) {
			t.Fatalf("ops %q vals %q:\n got %q (panic %v)\nwant %q (panic %v)", ops, vals, gb, gp, wb.Bytes(), wp)
		}
	})
}

// TestFillHeaderMatchesMailHeader holds fields filled by fillHeader to a
// mail.Header filled the same way, for messages with every kind of
// field.
func TestFillHeaderMatchesMailHeader(t *testing.T) {
	for _, m := range []*Message{
		broadcastMessage(0),
		{From: Address{Name: "S\u00e9nder \"Q\"", Address: "a@x.test"}, To: []Address{{Address: "b@y.test"}, {Name: "Long Name For Folding Purposes Here", Address: "c@y.test"}},
			Cc: []Address{{Address: "d@y.test"}}, ReplyTo: []Address{{Name: "R", Address: "r@x.test"}}, Subject: "News \u2014 " + strings.Repeat("long subject ", 9),
			Headers: map[string]string{"x-lower": "v", "X-Lower": "w", "Feedback-ID": "own:one", "In-Reply-To": "<p@x>"}, MessageID: "m1@x.test", FeedbackID: "w:c:s", Date: time.Unix(1790000000, 0).In(time.FixedZone("", -5*3600))},
		{From: Address{Address: "a@x.test"}, Bcc: []Address{{Address: "b@y.test"}}, MessageID: "<>", Date: time.Unix(1, 0)},
	} {
		var want mail.Header
		var got fields
		fillHeader(&want, m)
		fillHeader(&got, m)
		var wb bytes.Buffer
		_ = textproto.WriteHeader(&wb, want.Header.Header)
		gb := got.appendTo(nil)
		if m.MessageID == "<>" { // a generated id: not compared
			continue
		}
		if !bytes.Equal(gb, wb.Bytes()) {
			t.Fatalf("got %q\nwant %q", gb, wb.Bytes())
		}
	}
}

func TestCanonicalKey(t *testing.T) {
	for _, k := range []string{"MIME-Version", "Feedback-ID", "message-id", "List-Unsubscribe-Post", "x-ENTITY-ref-id", "Bad Key"} {
		if got, want := canonicalKey(k), nettextproto.CanonicalMIMEHeaderKey(k); got != want {
			t.Errorf("canonicalKey(%q) = %q, want %q", k, got, want)
		}
	}
}
