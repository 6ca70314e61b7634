package topics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/secretbox"
	"mailroom/internal/topics"
)

func newService(t testing.TB, now time.Time) *topics.Service {
	t.Helper()
	box, err := secretbox.New("fuzz-secret")
	if err != nil {
		t.Fatal(err)
	}
	return topics.New(nil, clock.NewFake(now), topics.LinkConfig{Box: box, PublicURL: "https://mail.example", UnsubscribeAddress: "unsubscribe@mail.example"}, nil)
}

// FuzzParseLink: any payload either parses into a link whose address has
// no line break, or is refused; it never panics.
func FuzzParseLink(f *testing.F) {
	f.Add([]byte("l1\nws_1\ntop_1\n1900000000\nann@example.com"))
	f.Add([]byte("l1\nws_1\n\n1900000000\nann@example.com"))
	f.Add([]byte("l1\n\n\n\n"))
	f.Add([]byte("l1\nws\ntop\n-5\na@b\r\nBcc: x@y"))
	f.Fuzz(func(t *testing.T, p []byte) {
		l, err := topics.ParseLink(p)
		if err != nil {
			return
		}
		if l.WorkspaceID == "" || strings.ContainsAny(l.Email, "\r\n") || !l.Expires.After(time.Unix(0, 0)) {
			t.Fatalf("accepted %q as %+v", p, l)
		}
	})
}

// FuzzOpenToken: a one-click token from outside either opens (only the
// tokens the service made) or is refused as invalid_link, and never
// reaches the database when refused (the service here has none).
func FuzzOpenToken(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	s := newService(f, now)
	good := strings.TrimPrefix(s.UnsubscribeURL("ws_1", "top_1", "ann@example.com", now.Add(time.Hour)), "https://mail.example/unsubscribe/")
	f.Add(good)
	f.Add(good[:len(good)-1] + "A")
	f.Add("")
	f.Add(".")
	f.Add(strings.Repeat("A", 5000))
	f.Add("unsubscribe " + good)
	f.Fuzz(func(t *testing.T, token string) {
		if strings.Contains(token, good) {
			return // the valid token would need a database
		}
		_, err := s.OpenUnsubscribePage(context.Background(), token)
		if err == nil || !strings.Contains(err.Error(), "invalid_link") {
			t.Fatalf("token %q: %v", token, err)
		}
		if err := s.UnsubscribeMail(context.Background(), "Re: unsubscribe "+token); err == nil || !strings.Contains(err.Error(), "invalid_link") {
			t.Fatalf("mail subject with %q: %v", token, err)
		}
	})
}

// TestLinkExpiry: a link opens until its expiry and not after, and a token
// for one purpose does not open the other page.
func TestLinkExpiry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newService(t, now)
	expired := strings.TrimPrefix(s.UnsubscribeURL("ws_1", "top_1", "ann@example.com", now), "https://mail.example/unsubscribe/")
	if _, err := s.OpenUnsubscribePage(context.Background(), expired); err == nil || !strings.Contains(err.Error(), "invalid_link") {
		t.Fatalf("expired link: %v", err)
	}
	pref := strings.TrimPrefix(s.PreferenceURL("ws_1", "ann@example.com", now.Add(time.Hour)), "https://mail.example/preferences/")
	if _, err := s.OpenUnsubscribePage(context.Background(), pref); err == nil || !strings.Contains(err.Error(), "invalid_link") {
		t.Fatalf("a preference token opened the unsubscribe page: %v", err)
	}
	if _, err := s.SavePreferencePage(context.Background(), pref[:len(pref)-2]+"xx", []string{"news"}, nil); err == nil {
		t.Fatal("a tampered preference token saved")
	}
}
