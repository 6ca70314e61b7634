package domains

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"mailroom/internal/dnsresolve"
)

// Lookuper is the part of a DNS resolver that record checks need;
// *dnsresolve.Resolver satisfies it.
type Lookuper interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]dnsresolve.MX, error)
	LookupCNAME(ctx context.Context, name string) (string, error)
}

var _ Lookuper = (*dnsresolve.Resolver)(nil)

// Checked is a record together with what the last check saw.
type Checked struct {
	Record
	Found bool `json:"found"`
}

// Check reports whether rec is published. Matching is deliberately tolerant of
// the ways DNS panels rewrite values (case, trailing dots, split TXT strings,
// extra tags or mechanisms), but never of a different key or token.
// err is non-nil only when the resolver could not answer; a missing name or
// record is simply not found.
func Check(ctx context.Context, r Lookuper, rec Record) (found bool, err error) {
	status, err := inspect(ctx, r, rec)
	return status == StatusVerified, err
}

// CheckAll checks every record concurrently. The returned slice always holds
// one entry per record, in order, with Status set to verified (found), failed
// (something else is published there) or pending (nothing is). Records whose
// lookup failed keep their previous status and are reported not found; the
// error then joins those failures.
func CheckAll(ctx context.Context, r Lookuper, recs []Record) ([]Checked, error) {
	out := make([]Checked, len(recs))
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		out[i].Record = rec
		wg.Go(func() {
			status, err := inspect(ctx, r, rec)
			if err != nil {
				errs[i] = fmt.Errorf("checking %s record at %s: %w", rec.Record, rec.Name, err)
				return
			}
			out[i].Status = status
			out[i].Found = status == StatusVerified
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// inspect returns the record's status as seen in DNS now.
func inspect(ctx context.Context, r Lookuper, rec Record) (string, error) {
	switch rec.Type {
	case "MX":
		mxs, err := r.LookupMX(ctx, rec.Name)
		if err != nil {
			return notFound(err)
		}
		for _, mx := range mxs {
			if sameHost(mx.Host, rec.Value) {
				return StatusVerified, nil
			}
		}
		return StatusFailed, nil
	case "CNAME":
		target, err := r.LookupCNAME(ctx, rec.Name)
		if err != nil {
			return notFound(err)
		}
		if sameHost(target, rec.Value) {
			return StatusVerified, nil
		}
		return StatusFailed, nil
	}

	txts, err := r.LookupTXT(ctx, rec.Name)
	if err != nil {
		return notFound(err)
	}
	var match, relevant func(string) bool
	switch rec.Record {
	case RecordDKIM:
		want := dkimKey(rec.Value)
		match = func(s string) bool { return want != "" && dkimKey(s) == want }
		relevant = func(s string) bool { _, ok := tags(s)["p"]; return ok }
	case RecordSPF:
		want := spfMechanisms(rec.Value)
		match = func(s string) bool { return isSPF(s) && containsAll(spfMechanisms(s), want) }
		relevant = isSPF
	case RecordDMARC:
		match = isDMARC
		relevant = func(s string) bool { return strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "v=dmarc") }
	case RecordOwnership:
		want := strings.TrimSpace(rec.Value)
		match = func(s string) bool { return strings.TrimSpace(s) == want }
		relevant = func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), OwnershipPrefix) }
	default:
		match = func(s string) bool { return s == rec.Value }
		relevant = func(string) bool { return true }
	}
	// Two SPF records are a permanent error to every receiver (RFC 7208
	// section 4.5), whatever one of them says.
	if rec.Record == RecordSPF && countFunc(txts, isSPF) > 1 {
		return StatusFailed, nil
	}
	status := StatusPending
	for _, s := range txts {
		if match(s) {
			return StatusVerified, nil
		}
		if relevant(s) {
			status = StatusFailed
		}
	}
	return status, nil
}

func countFunc(ss []string, f func(string) bool) int {
	n := 0
	for _, s := range ss {
		if f(s) {
			n++
		}
	}
	return n
}

// notFound turns the resolver's not-found into a pending status and passes
// every other failure up.
func notFound(err error) (string, error) {
	if errors.Is(err, dnsresolve.ErrNotFound) {
		return StatusPending, nil
	}
	return "", err
}

func sameHost(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "."), strings.TrimSuffix(b, "."))
}

// tags parses a DKIM-style tag=value list (RFC 6376 §3.2). Tag names are
// lowercased; values are trimmed.
func tags(s string) map[string]string {
	out := make(map[string]string)
	for part := range strings.SplitSeq(s, ";") {
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		out[strings.ToLower(strings.TrimSpace(name))] = strings.TrimSpace(value)
	}
	return out
}

// dkimKey is the p= value with folding whitespace removed, or "" if absent.
func dkimKey(s string) string {
	return strings.Join(strings.Fields(tags(s)["p"]), "")
}

// isSPF reports whether s is an SPF record (RFC 7208 §4.5: "v=spf1" followed
// by a space or the end).
func isSPF(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return s == "v=spf1" || strings.HasPrefix(s, "v=spf1 ")
}

// spfMechanisms lists the terms of an SPF record other than the version and
// "all", normalised so that "+a:MX.example." matches "a:mx.example".
func spfMechanisms(s string) []string {
	var out []string
	for i, term := range strings.Fields(strings.ToLower(s)) {
		if i == 0 && term == "v=spf1" {
			continue
		}
		term = strings.TrimPrefix(term, "+")
		term = strings.TrimSuffix(term, ".")
		if strings.TrimLeft(term, "~-?") == "all" {
			continue
		}
		out = append(out, term)
	}
	return out
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// isDMARC reports whether s is a usable DMARC record (RFC 7489 §6.3): it
// starts with v=DMARC1 and any p= is a known policy.
func isDMARC(s string) bool {
	first, _, _ := strings.Cut(s, ";")
	name, value, ok := strings.Cut(first, "=")
	if !ok || strings.TrimSpace(name) != "v" || strings.TrimSpace(value) != "DMARC1" {
		return false
	}
	if p, ok := tags(s)["p"]; ok {
		switch strings.ToLower(p) {
		case "none", "quarantine", "reject":
		default:
			return false
		}
	}
	return true
}
