package sending

import (
	"reflect"
	"testing"
)

// The plain path must take the requests most callers send, or it is dead
// weight; and it must give up on everything it does not decode exactly.
func TestDecodePlainTakes(t *testing.T) {
	for _, tc := range []struct {
		body  string
		plain bool
	}{
		{`{"from":"Acme <a@acme.test>","to":["delivered@mailroom.localhost"],"subject":"Hi","html":"<p>x</p>","text":"x","tags":{"kind":"receipt"}}`, true},
		{`{"from":"a@acme.test","to":"b@c.test","cc":[],"bcc":null,"reply_to":" ","headers":{"X-Id":"1"},"send_at":"in 1 min","idempotency_key":"k"}`, true},
		{` { "to" : [ "a@b.test" , "c@d.test" ] } `, true},
		{`{}`, true},
		{`{"subject":"caf\u00e9","html":"\u003cp\u003e","text":"a\nb"}`, true}, // escapes, as Go's encoder writes them
		{`{"subject":"\ud800"}`, true},                                         // a lone surrogate: U+FFFD, as encoding/json decodes it
		{`{"to":[1]}`, false},                                                  // not a string
		{`{"headers":{"X":null}}`, false},                                      // not a string
		{`{"attachments":[]}`, false},                                          // attachments are not plain
		{`{"template":null}`, false},                                           // nor is a template
		{`{"form":"a@b.test"}`, false},                                         // unknown field
		{`{"subject":"x"`, false},                                              // not JSON
		{`["x"]`, false},                                                       // not an object
		{"{\"subject\":\"\xff\"}", true},                                       // not UTF-8: U+FFFD, as encoding/json decodes it
		{`{"to":{"a":"b"}}`, false},                                            // wrong shape
	} {
		_, plain := decodePlain([]byte(tc.body))
		if plain != tc.plain {
			t.Errorf("decodePlain(%s) plain = %v, want %v", tc.body, plain, tc.plain)
		}
	}
}

// FuzzDecodePlainAgrees checks that wherever the plain path decodes a body,
// the general path decodes it to the same request.
func FuzzDecodePlainAgrees(f *testing.F) {
	for _, s := range []string{
		fullBody(), `{}`, `{"to":"a@b.co"}`, `{"to":" "}`, `{"to":[]}`, `{"to":["a","b"],"to":null}`,
		`{"to":null,"to":"x@y.z"}`, `{"subject":"\ud800\u00e9\n","tags":{"\u0041":"\"q\""}}`, `{"tags":{}}`, `{"tags":{"a":"1","a":"2"}}`, `{"headers":{"X-A":"b"},"subject":""}`,
		`{"from":"a@b.co","to":["delivered@mailroom.localhost"],"subject":"","html":"x","send_at":"tomorrow at 9am"}`,
		`{"html":"\u003cp\u003e\t\\\/\b\f\r\n\"x\u00E9\u0000"}`, `{"subject":"\ud83d\ude00 and \udc00"}`, `{"text":"é\u2028ü"}`,
		"{\"subject\":\"\xff\\n\"}", `{"subject":"\u12"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, plain := decodePlain(raw)
		if !plain {
			return
		}
		slow, err := decodeRequest(raw)
		if err != nil {
			t.Fatalf("plain path decoded %q, the general path refused it: %v", raw, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nplain   %#v\ngeneral %#v", raw, fast, slow)
		}
	})
}

func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(`{"from":"Bench <onboarding@bench.test>","to":["delivered@bench.test"],"subject":"Your receipt","text":"Thanks for your order.","html":"\u003cp\u003eThanks for your order.\u003c/p\u003e","tags":{"kind":"receipt"}}`)
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
