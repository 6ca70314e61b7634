package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var sigTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// independentSig recomputes the spec's v1 without using package code.
func independentSig(secret string, t time.Time, body []byte) string {
	h := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(h, "%d.%s", t.Unix(), body)
	return hex.EncodeToString(h.Sum(nil))
}

func TestSignFormat(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"whd_1","event":"email.sent"}`)
	got := Sign(sigTime, body, "whsec_a", "whsec_b")
	want := fmt.Sprintf("t=%d,v1=%s,v1=%s", sigTime.Unix(),
		independentSig("whsec_a", sigTime, body), independentSig("whsec_b", sigTime, body))
	if got != want {
		t.Fatalf("Sign = %s\nwant   %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"whd_1"}`)
	good := Sign(sigTime, body, "s1")
	rotating := Sign(sigTime, body, "old", "s1")
	cases := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", good, body, sigTime, nil},
		{"valid within tolerance", good, body, sigTime.Add(299 * time.Second), nil},
		{"second v1 during rotation", rotating, body, sigTime, nil},
		{"spaces after commas", strings.ReplaceAll(rotating, ",", ", "), body, sigTime, nil},
		{"unknown scheme ignored", good + ",v0=abc", body, sigTime, nil},
		{"too old", good, body, sigTime.Add(301 * time.Second), ErrSignatureExpired},
		{"too far ahead", good, body, sigTime.Add(-301 * time.Second), ErrSignatureExpired},
		{"body altered", good, []byte(`{"id":"whd_2"}`), sigTime, ErrSignatureMismatch},
		{"wrong secret only", Sign(sigTime, body, "other"), body, sigTime, ErrSignatureMismatch},
		{"timestamp altered", strings.Replace(good, fmt.Sprint(sigTime.Unix()), fmt.Sprint(sigTime.Unix()+1), 1), body, sigTime, ErrSignatureMismatch},
		{"empty", "", body, sigTime, ErrSignatureMalformed},
		{"no v1", fmt.Sprintf("t=%d", sigTime.Unix()), body, sigTime, ErrSignatureMalformed},
		{"no t", "v1=" + strings.Repeat("00", 32), body, sigTime, ErrSignatureMalformed},
		{"two t", good + ",t=1", body, sigTime, ErrSignatureMalformed},
		{"short v1", fmt.Sprintf("t=%d,v1=abcd", sigTime.Unix()), body, sigTime, ErrSignatureMalformed},
		{"negative t", "t=-5,v1=" + strings.Repeat("00", 32), body, sigTime, ErrSignatureMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.header, c.body, "s1", c.now, SignatureTolerance)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

func TestVerifyWithoutTolerance(t *testing.T) {
	t.Parallel()
	body := []byte("x")
	if err := Verify(Sign(sigTime, body, "k"), body, "k", sigTime.Add(100*time.Hour), 0); err != nil {
		t.Fatal(err)
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := NewSecret(), NewSecret()
	if !strings.HasPrefix(a, "whsec_") || len(a) < 6+50 || a == b {
		t.Fatalf("NewSecret gave %q and %q", a, b)
	}
}

func FuzzVerify(f *testing.F) {
	body := []byte(`{"id":"whd_1"}`)
	f.Add(Sign(sigTime, body, "k"), body)
	f.Add(Sign(sigTime, body, "a", "k"), body)
	f.Add("t=1,v1=zz", []byte{})
	f.Add(",,==,t=,v1=", []byte("x"))
	f.Add("t=99999999999999999999,v1="+strings.Repeat("ab", 32), body)
	f.Fuzz(func(t *testing.T, header string, b []byte) {
		err := Verify(header, b, "k", sigTime, SignatureTolerance)
		if err == nil {
			// Anything accepted must carry the real digest of "<t>.<body>".
			var ts string
			for part := range strings.SplitSeq(header, ",") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
					ts = v
				}
			}
			h := hmac.New(sha256.New, []byte("k"))
			fmt.Fprintf(h, "%s.%s", ts, b)
			if !strings.Contains(strings.ToLower(header), "v1="+hex.EncodeToString(h.Sum(nil))) {
				t.Fatalf("accepted %q without the right digest", header)
			}
			return
		}
		if !errors.Is(err, ErrSignatureMalformed) && !errors.Is(err, ErrSignatureExpired) && !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("unexpected error kind %v", err)
		}
	})
}
