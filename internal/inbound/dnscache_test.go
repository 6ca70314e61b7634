package inbound

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/mailauth"
)

// countingTXT answers TXT lookups from a map, counting the questions; a
// name missing from the map is NXDOMAIN, one mapped to nil fails to answer
// (a timeout).
type countingTXT struct {
	mailauth.Resolver
	records map[string][]string
	asked   int
}

func (r *countingTXT) LookupTXT(_ context.Context, name string) ([]string, error) {
	r.asked++
	txt, ok := r.records[name]
	switch {
	case !ok:
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	case txt == nil:
		return nil, &net.DNSError{Err: "i/o timeout", Name: name, IsTimeout: true, IsTemporary: true}
	}
	return txt, nil
}

// TestTXTCache: an answer, and the absence of a record, are reused for
// txtCacheFor whatever the name's case or trailing dot; a failure to ask is
// asked again at once; after txtCacheFor the question goes out again.
func TestTXTCache(t *testing.T) {
	r := &countingTXT{records: map[string][]string{"sender.example": {"v=spf1 -all"}, "slow.example": nil}}
	c := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	cache := newTXTCache(r, c)
	ask := func(name string, wantAsked int) ([]string, error) {
		t.Helper()
		txt, err := cache.LookupTXT(t.Context(), name)
		if r.asked != wantAsked {
			t.Fatalf("%s: the resolver was asked %d times, want %d", name, r.asked, wantAsked)
		}
		return txt, err
	}
	if txt, err := ask("sender.example", 1); err != nil || len(txt) != 1 || txt[0] != "v=spf1 -all" {
		t.Fatalf("first answer: %v %v", txt, err)
	}
	if txt, err := ask("Sender.Example.", 1); err != nil || len(txt) != 1 {
		t.Fatalf("remembered answer: %v %v", txt, err)
	}
	var dnsErr *net.DNSError
	if _, err := ask("_dmarc.sender.example", 2); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("absent record: %v", err)
	}
	if _, err := ask("_dmarc.sender.example", 2); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("remembered absence: %v", err)
	}
	if _, err := ask("slow.example", 3); !errors.As(err, &dnsErr) || !dnsErr.IsTimeout {
		t.Fatalf("timeout: %v", err)
	}
	if _, err := ask("slow.example", 4); err == nil {
		t.Fatal("a timeout was remembered as an answer")
	}
	c.Advance(txtCacheFor - time.Second)
	ask("sender.example", 4)
	c.Advance(time.Second)
	ask("sender.example", 5)
	ask("_dmarc.sender.example", 6)
}
