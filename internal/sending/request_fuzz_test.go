package sending

import (
	"testing"

	"mailroom/internal/apierr"
)

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		fullBody(), `{}`, `[]`, `null`, `"x"`, `{"to":"a@b.co"}`, `{"to":[1]}`, `{"headers":{"a":null}}`,
		`{"attachments":[{"filename":"a","content_base64":"eA=="}]}`, `{"template":{"id":"x","variables":{"a":1}}}`,
		`{"from":"a@b.co","to":["delivered@mailroom.localhost"],"subject":"","html":"x","send_at":"tomorrow at 9am"}`,
		`{"from":"a@b.co","to":"b@c.co","subject":"s","text":"t","template":[],"tags":{"a:b":"c"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := DecodeRequest(raw)
		if err != nil {
			if _, ok := apierr.As(err); !ok {
				t.Fatalf("DecodeRequest error %T %v is not an *apierr.Error", err, err)
			}
			return
		}
		v, err := Validate(r, testNow, svcDomain)
		if err != nil {
			if _, ok := apierr.As(err); !ok {
				t.Fatalf("Validate error %T %v is not an *apierr.Error", err, err)
			}
			return
		}
		if len(v.Recipients()) == 0 || len(v.Recipients()) > MaxRecipients {
			t.Fatalf("validated with %d recipients", len(v.Recipients()))
		}
		if v.Fingerprint() != v.Fingerprint() {
			t.Fatal("fingerprint is not stable")
		}
	})
}
