package sending

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/apierr"
)

const svcDomain = "mailroom.localhost"

var testNow = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		code  string // "" means success
		field string // must appear in the message
		check func(t *testing.T, r *Request)
	}{
		{name: "not json", body: `{"from":`, code: "invalid_json"},
		{name: "empty body", body: ``, code: "invalid_json"},
		{name: "trailing garbage", body: `{} x`, code: "invalid_json"},
		{name: "array body", body: `[]`, code: "invalid_request"},
		{name: "string body", body: `"hi"`, code: "invalid_request"},
		{name: "null body", body: `null`, code: "invalid_request"},
		{name: "from number", body: `{"from": 1}`, code: "invalid_request", field: "from"},
		{name: "subject bool", body: `{"subject": true}`, code: "invalid_request", field: "subject"},
		{name: "to object", body: `{"to": {}}`, code: "invalid_request", field: "to"},
		{name: "to array of numbers", body: `{"to": ["a@b.co", 3]}`, code: "invalid_request", field: "to[1]"},
		{name: "to array with null", body: `{"to": [null]}`, code: "invalid_request", field: "to[0]"},
		{name: "cc number", body: `{"cc": 5}`, code: "invalid_request", field: "cc"},
		{name: "reply_to number", body: `{"reply_to": 5}`, code: "invalid_request", field: "reply_to"},
		{name: "headers array", body: `{"headers": []}`, code: "invalid_request", field: "headers"},
		{name: "header value number", body: `{"headers": {"X-A": 1}}`, code: "invalid_request", field: "headers.X-A"},
		{name: "tags value object", body: `{"tags": {"k": {}}}`, code: "invalid_request", field: "tags.k"},
		{name: "attachments object", body: `{"attachments": {}}`, code: "invalid_request", field: "attachments"},
		{name: "attachment not object", body: `{"attachments": ["x"]}`, code: "invalid_request", field: "attachments[0]"},
		{name: "attachment filename number", body: `{"attachments": [{"filename": 1}]}`, code: "invalid_request", field: "attachments[0].filename"},
		{name: "send_at number", body: `{"send_at": 1700000000}`, code: "invalid_request", field: "send_at"},
		{name: "idempotency_key number", body: `{"idempotency_key": 7}`, code: "invalid_request", field: "idempotency_key"},
		{name: "empty object", body: `{}`, check: func(t *testing.T, r *Request) {
			if r.From != nil || r.To != nil || r.Subject != nil || r.Template != nil {
				t.Fatalf("%+v", r)
			}
		}},
		{name: "to as string", body: `{"to": "a@b.co"}`, check: func(t *testing.T, r *Request) {
			if len(r.To) != 1 || r.To[0] != "a@b.co" {
				t.Fatalf("to %q", r.To)
			}
		}},
		{name: "to as empty string", body: `{"to": "  "}`, check: func(t *testing.T, r *Request) {
			if r.To != nil {
				t.Fatalf("to %q", r.To)
			}
		}},
		{name: "cc bcc reply_to both shapes", body: `{"cc": ["a@b.co","c@d.co"], "bcc": "e@f.co", "reply_to": "g@h.co"}`, check: func(t *testing.T, r *Request) {
			if len(r.Cc) != 2 || len(r.Bcc) != 1 || len(r.ReplyTo) != 1 {
				t.Fatalf("%+v", r)
			}
		}},
		{name: "empty subject kept apart from missing", body: `{"subject": ""}`, check: func(t *testing.T, r *Request) {
			if r.Subject == nil || *r.Subject != "" {
				t.Fatalf("subject %v", r.Subject)
			}
		}},
		{name: "nulls are absent", body: `{"from": null, "to": null, "subject": null, "template": null, "headers": null, "attachments": null, "send_at": null}`,
			check: func(t *testing.T, r *Request) {
				if r.From != nil || r.To != nil || r.Subject != nil || r.Template != nil || r.Headers != nil || r.Attachments != nil || r.SendAt != nil {
					t.Fatalf("%+v", r)
				}
			}},
		{name: "unknown field refused", body: `{"from": "a@b.co", "future_field": {"x": 1}}`, code: "invalid_request", field: "future_field"},
		{name: "field names match exactly", body: `{"from": "a@b.co", "From": 5}`, code: "invalid_request", field: "From"},
		{name: "template kept raw", body: `{"template": {"id": "t1"}}`, check: func(t *testing.T, r *Request) {
			if string(r.Template) != `{"id": "t1"}` {
				t.Fatalf("template %s", r.Template)
			}
		}},
		{name: "full", body: fullBody(), check: func(t *testing.T, r *Request) {
			if *r.From != "Acme <hello@acme.example>" || r.Headers["X-Campaign"] != "fall" || r.Tags["kind"] != "receipt" ||
				len(r.Attachments) != 1 || r.Attachments[0].Filename != "a.txt" || *r.SendAt != "in 1 hour" || *r.IdempotencyKey != "k-1" {
				t.Fatalf("%+v", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(tt.body))
			if tt.code != "" {
				e, ok := apierr.As(err)
				if !ok || e.Code != tt.code || e.Status != http.StatusBadRequest {
					t.Fatalf("DecodeRequest = %v, want %s", err, tt.code)
				}
				if tt.field != "" && !strings.Contains(e.Message, tt.field) {
					t.Fatalf("message %q does not name %s", e.Message, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			tt.check(t, r)
		})
	}
}

func fullBody() string {
	return `{
		"from": "Acme <hello@acme.example>",
		"to": ["Bob <bob@example.com>"],
		"cc": "carol@example.com",
		"bcc": ["dave@example.com"],
		"reply_to": ["support@acme.example"],
		"subject": "Your receipt",
		"html": "<p>Thanks</p>",
		"text": "Thanks",
		"headers": {"X-Campaign": "fall"},
		"attachments": [{"filename": "a.txt", "content_base64": "aGVsbG8=", "content_type": "text/plain"}],
		"tags": {"kind": "receipt"},
		"send_at": "in 1 hour",
		"idempotency_key": "k-1"
	}`
}

// body builds a valid request and lets a case change it.
func body(mut func(m map[string]any)) *Request {
	m := map[string]any{
		"from":    "Acme <hello@acme.example>",
		"to":      []any{"bob@example.com"},
		"subject": "Hi",
		"text":    "Hello",
	}
	if mut != nil {
		mut(m)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	r, err := DecodeRequest(raw)
	if err != nil {
		panic(err)
	}
	return r
}

func addrs(prefix string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d@example.com", prefix, i)
	}
	return out
}

func TestValidateCodes(t *testing.T) {
	t.Parallel()
	b64 := base64.StdEncoding.EncodeToString([]byte("hello"))
	tests := []struct {
		name   string
		mut    func(m map[string]any)
		code   string
		status int
		field  string
	}{
		{name: "valid", mut: nil},
		{name: "missing from", mut: func(m map[string]any) { delete(m, "from") }, code: "missing_from"},
		{name: "blank from", mut: func(m map[string]any) { m["from"] = "  " }, code: "missing_from"},
		{name: "invalid from", mut: func(m map[string]any) { m["from"] = "Acme <hello>" }, code: "invalid_from", field: "from"},
		{name: "from with CRLF", mut: func(m map[string]any) { m["from"] = "a@b.co\r\nBcc: x@y.co" }, code: "invalid_from"},
		{name: "missing to", mut: func(m map[string]any) { delete(m, "to") }, code: "missing_to"},
		{name: "empty to array", mut: func(m map[string]any) { m["to"] = []any{} }, code: "missing_to"},
		{name: "empty to string", mut: func(m map[string]any) { m["to"] = "" }, code: "missing_to"},
		{name: "only cc is missing_to", mut: func(m map[string]any) { delete(m, "to"); m["cc"] = "c@example.com" }, code: "missing_to"},
		{name: "invalid to", mut: func(m map[string]any) { m["to"] = []any{"ok@example.com", "nope"} }, code: "invalid_recipient", field: `to[1] "nope"`},
		{name: "invalid cc", mut: func(m map[string]any) { m["cc"] = "x@localhost" }, code: "invalid_recipient", field: "cc[0]"},
		{name: "invalid bcc", mut: func(m map[string]any) { m["bcc"] = []any{"a@b@c.co"} }, code: "invalid_recipient", field: "bcc[0]"},
		{name: "blank entry in array", mut: func(m map[string]any) { m["to"] = []any{"a@example.com", ""} }, code: "invalid_recipient", field: "to[1]"},
		{name: "50 recipients", mut: func(m map[string]any) { m["to"] = addrs("t", 30); m["cc"] = addrs("c", 10); m["bcc"] = addrs("b", 10) }},
		{name: "51 recipients", mut: func(m map[string]any) { m["to"] = addrs("t", 30); m["cc"] = addrs("c", 10); m["bcc"] = addrs("b", 11) }, code: "too_many_recipients"},
		{name: "duplicates not counted", mut: func(m map[string]any) { m["to"] = addrs("t", 50); m["cc"] = addrs("T", 50) }},
		{name: "mixed test and real", mut: func(m map[string]any) { m["to"] = []any{"delivered@mailroom.localhost", "bob@example.com"} }, code: "mixed_test_and_real_recipients"},
		{name: "mixed via bcc", mut: func(m map[string]any) { m["to"] = "bounced+x@mailroom.localhost"; m["bcc"] = "bob@example.com" }, code: "mixed_test_and_real_recipients"},
		{name: "test reply_to does not mix", mut: func(m map[string]any) { m["reply_to"] = "delivered@mailroom.localhost" }},
		{name: "invalid reply_to", mut: func(m map[string]any) { m["reply_to"] = []any{"x"} }, code: "invalid_request", field: "reply_to[0]"},
		{name: "missing subject", mut: func(m map[string]any) { delete(m, "subject") }, code: "missing_subject"},
		{name: "empty subject allowed", mut: func(m map[string]any) { m["subject"] = "" }},
		{name: "subject injection", mut: func(m map[string]any) { m["subject"] = "Hi\r\nBcc: x@y.co" }, code: "invalid_request", field: "subject"},
		{name: "missing body", mut: func(m map[string]any) { delete(m, "text") }, code: "missing_body"},
		{name: "empty bodies", mut: func(m map[string]any) { m["text"] = ""; m["html"] = "" }, code: "missing_body"},
		{name: "html only", mut: func(m map[string]any) { delete(m, "text"); m["html"] = "<b>x</b>" }},
		{name: "template not object", mut: func(m map[string]any) { delete(m, "text"); m["template"] = "welcome" }, code: "invalid_template"},
		{name: "template without id", mut: func(m map[string]any) { delete(m, "text"); m["template"] = map[string]any{} }, code: "invalid_template"},
		{name: "template id number", mut: func(m map[string]any) { delete(m, "text"); m["template"] = map[string]any{"id": 3} }, code: "invalid_template"},
		{name: "template variables array", mut: func(m map[string]any) {
			delete(m, "text")
			m["template"] = map[string]any{"id": "welcome", "variables": []any{1}}
		}, code: "invalid_template"},
		{name: "template extra field", mut: func(m map[string]any) {
			delete(m, "text")
			m["template"] = map[string]any{"id": "w", "vars": map[string]any{}}
		}, code: "invalid_template"},
		{name: "template well formed but unknown", mut: func(m map[string]any) {
			delete(m, "text")
			m["template"] = map[string]any{"id": "welcome", "variables": map[string]any{"name": "Bob"}}
		}, code: "invalid_template", field: "welcome"},
		{name: "reserved header", mut: func(m map[string]any) { m["headers"] = map[string]any{"subject": "x"} }, code: "reserved_header"},
		{name: "bad header name", mut: func(m map[string]any) { m["headers"] = map[string]any{"X Y": "x"} }, code: "invalid_header_name"},
		{name: "header injection", mut: func(m map[string]any) { m["headers"] = map[string]any{"X-Y": "a\nb"} }, code: "invalid_request"},
		{name: "attachment without filename", mut: func(m map[string]any) { m["attachments"] = []any{map[string]any{"content_base64": b64}} }, code: "invalid_attachment"},
		{name: "attachment bad base64", mut: func(m map[string]any) {
			m["attachments"] = []any{map[string]any{"filename": "a", "content_base64": "!!"}}
		}, code: "invalid_attachment"},
		{name: "attachments too large", mut: func(m map[string]any) {
			m["attachments"] = []any{map[string]any{"filename": "a", "content_base64": strings.Repeat("A", MaxAttachmentsBase64+4)}}
		}, code: "attachments_too_large", status: http.StatusRequestEntityTooLarge},
		{name: "tags ok", mut: func(m map[string]any) { m["tags"] = map[string]any{"kind": "receipt", "empty": ""} }},
		{name: "tag key with colon", mut: func(m map[string]any) { m["tags"] = map[string]any{"a:b": "x"} }, code: "invalid_request", field: "tags"},
		{name: "tag key empty", mut: func(m map[string]any) { m["tags"] = map[string]any{"": "x"} }, code: "invalid_request"},
		{name: "tag value too long", mut: func(m map[string]any) { m["tags"] = map[string]any{"k": strings.Repeat("v", MaxTagValue+1)} }, code: "invalid_request", field: "tags.k"},
		{name: "too many tags", mut: func(m map[string]any) {
			tags := map[string]any{}
			for i := range MaxTags + 1 {
				tags[fmt.Sprint("k", i)] = "v"
			}
			m["tags"] = tags
		}, code: "invalid_request"},
		{name: "send_at invalid", mut: func(m map[string]any) { m["send_at"] = "whenever" }, code: "send_at_invalid"},
		{name: "send_at past", mut: func(m map[string]any) { m["send_at"] = "2020-01-01T00:00:00Z" }, code: "send_at_in_past"},
		{name: "send_at too far", mut: func(m map[string]any) { m["send_at"] = "in 31 days" }, code: "send_at_too_far"},
		{name: "idempotency key empty", mut: func(m map[string]any) { m["idempotency_key"] = "" }, code: "invalid_request", field: "idempotency_key"},
		{name: "idempotency key long", mut: func(m map[string]any) { m["idempotency_key"] = strings.Repeat("k", 257) }, code: "invalid_request"},
		{name: "idempotency key at cap", mut: func(m map[string]any) { m["idempotency_key"] = strings.Repeat("k", 256) }},
		// Order: the earlier rule wins when several fail.
		{name: "from before to", mut: func(m map[string]any) { delete(m, "from"); delete(m, "to") }, code: "missing_from"},
		{name: "to before subject", mut: func(m map[string]any) { delete(m, "to"); delete(m, "subject") }, code: "missing_to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Validate(body(tt.mut), testNow, svcDomain)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if v == nil {
					t.Fatal("nil Validated")
				}
				return
			}
			e, ok := apierr.As(err)
			want := tt.status
			if want == 0 {
				want = http.StatusBadRequest
			}
			if !ok || e.Code != tt.code || e.Status != want {
				t.Fatalf("Validate = %v, want %d %s", err, want, tt.code)
			}
			if tt.field != "" && !strings.Contains(e.Message, tt.field) {
				t.Fatalf("message %q does not name %s", e.Message, tt.field)
			}
		})
	}
}

func TestValidateResult(t *testing.T) {
	t.Parallel()
	r, err := DecodeRequest([]byte(fullBody()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Validate(r, testNow, svcDomain)
	if err != nil {
		t.Fatal(err)
	}
	if v.From != (Address{Name: "Acme", Email: "hello@acme.example"}) ||
		len(v.To) != 1 || v.To[0] != (Address{Name: "Bob", Email: "bob@example.com"}) ||
		len(v.Cc) != 1 || len(v.Bcc) != 1 || len(v.ReplyTo) != 1 ||
		v.Subject != "Your receipt" || v.HTML != "<p>Thanks</p>" || v.Text != "Thanks" ||
		string(v.Attachments[0].Content) != "hello" || v.Attachments[0].ContentType != "text/plain" ||
		v.IdempotencyKey != "k-1" || v.TestMode || v.SendAt == nil || !v.SendAt.Equal(testNow.Add(time.Hour)) {
		t.Fatalf("%+v", v)
	}
	if got := len(v.Recipients()); got != 3 {
		t.Fatalf("Recipients: %d", got)
	}
}

func TestValidateDedupesRecipients(t *testing.T) {
	t.Parallel()
	r := body(func(m map[string]any) {
		m["to"] = []any{"Bob <Bob@Example.com>", "bob@example.com", "amy@example.com"}
		m["cc"] = []any{"BOB@EXAMPLE.COM", "cid@example.com"}
		m["bcc"] = "amy@example.com"
	})
	v, err := Validate(r, testNow, svcDomain)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.To) != 2 || v.To[0].Name != "Bob" || v.To[0].Email != "Bob@example.com" || len(v.Cc) != 1 || v.Cc[0].Email != "cid@example.com" || len(v.Bcc) != 0 {
		t.Fatalf("to %v cc %v bcc %v", v.To, v.Cc, v.Bcc)
	}
}

func TestValidateTestMode(t *testing.T) {
	t.Parallel()
	r := body(func(m map[string]any) {
		m["to"] = []any{"delivered@mailroom.localhost", "Bounced+b1@Mailroom.Localhost"}
		m["cc"] = "complained@mailroom.localhost"
	})
	v, err := Validate(r, testNow, svcDomain)
	if err != nil {
		t.Fatal(err)
	}
	if !v.TestMode {
		t.Fatal("all test recipients: TestMode must be true")
	}
	v, err = Validate(body(nil), testNow, svcDomain)
	if err != nil || v.TestMode {
		t.Fatalf("real recipients: %v %v", v, err)
	}
}

func TestValidateTemplateHook(t *testing.T) {
	t.Parallel()
	rules := Rules{ServiceDomain: svcDomain, TemplateExists: func(id string) bool { return id == "welcome" }}
	r := body(func(m map[string]any) {
		delete(m, "text")
		m["template"] = map[string]any{"id": "welcome", "variables": map[string]any{"b": 2, "a": "x"}}
	})
	v, err := rules.Validate(r, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if v.TemplateID != "welcome" || string(v.TemplateVariables) != `{"a":"x","b":2}` {
		t.Fatalf("%q %s", v.TemplateID, v.TemplateVariables)
	}
	r = body(func(m map[string]any) { delete(m, "text"); m["template"] = map[string]any{"id": "other"} })
	if _, err := rules.Validate(r, testNow); !apierr.Is(err, "invalid_template") {
		t.Fatalf("unknown template: %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(raw string, now time.Time) string {
		t.Helper()
		r, err := DecodeRequest([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		v, err := Validate(r, now, svcDomain)
		if err != nil {
			t.Fatal(err)
		}
		return v.Fingerprint()
	}
	base := fp(`{"from":"a@x.example","to":["b@y.example"],"subject":"s","text":"t","tags":{"a":"1","b":"2"},"send_at":"in 10 minutes","idempotency_key":"k1"}`, testNow)
	same := []string{
		`{"idempotency_key":"k2","send_at":"In  10 Minutes","tags":{"b":"2","a":"1"},"text":"t","subject":"s","to":"b@Y.example","from":"a@X.EXAMPLE"}`,
		`{"from":"a@x.example","to":["b@y.example","B@y.example"],"subject":"s","text":"t","tags":{"a":"1","b":"2"},"send_at":"in 10 minutes","idempotency_key":"k3"}`,
	}
	for _, s := range same {
		if got := fp(s, testNow.Add(time.Second)); got != base {
			t.Errorf("fingerprint changed for an equal body %s", s)
		}
	}
	different := []string{
		`{"from":"a@x.example","to":["b@y.example"],"subject":"S","text":"t","tags":{"a":"1","b":"2"},"send_at":"in 10 minutes"}`,
		`{"from":"a@x.example","to":["b@y.example"],"subject":"s","text":"t","tags":{"a":"1"},"send_at":"in 10 minutes"}`,
		`{"from":"a@x.example","to":["b@y.example"],"subject":"s","text":"t","tags":{"a":"1","b":"2"},"send_at":"in 11 minutes"}`,
		`{"from":"a@x.example","to":["b@y.example"],"subject":"s","text":"t","tags":{"a":"1","b":"2"}}`,
		`{"from":"A <a@x.example>","to":["b@y.example"],"subject":"s","text":"t","tags":{"a":"1","b":"2"},"send_at":"in 10 minutes"}`,
		`{"from":"a@x.example","cc":["b@y.example"],"to":["c@y.example"],"subject":"s","text":"t","tags":{"a":"1","b":"2"},"send_at":"in 10 minutes"}`,
		`{"from":"a@x.example","to":["b@y.example"],"subject":"s","text":"t","tags":{"a":"1","b":"2"},"send_at":"in 10 minutes","attachments":[{"filename":"f","content_base64":"eA=="}]}`,
	}
	for _, s := range different {
		if got := fp(s, testNow); got == base {
			t.Errorf("fingerprint equal for a different body %s", s)
		}
	}
	if len(base) != 64 {
		t.Fatalf("fingerprint %q is not hex sha256", base)
	}
}

// jsonText writes what encoding/json writes, and the column's empty value
// for an empty or nil list or map.
func TestJSONText(t *testing.T) {
	for _, tc := range []struct {
		v           any
		empty, want string
	}{
		{[]string(nil), "[]", "[]"},
		{[]string{}, "[]", "[]"},
		{[]string{"a <b@c.d>"}, "[]", `["a \u003cb@c.d\u003e"]`},
		{addressList(nil), "[]", "[]"},
		{addressList{"b@c.d"}, "[]", `["b@c.d"]`},
		{map[string]string(nil), "{}", "{}"},
		{map[string]string{}, "{}", "{}"},
		{map[string]string{"b": "2", "a": "1"}, "{}", `{"a":"1","b":"2"}`},
		{[]StoredAttachment(nil), "[]", "[]"},
		{[]StoredAttachment{{Filename: "f", ContentType: "text/plain", Content: []byte("hi")}}, "[]", `[{"filename":"f","content_type":"text/plain","content":"aGk="}]`},
	} {
		if got := jsonText(tc.v, tc.empty); got != tc.want {
			t.Errorf("jsonText(%#v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}
