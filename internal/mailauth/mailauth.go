// Package mailauth tells who sent a received message: SPF (RFC 7208) for
// the connecting IP and the envelope, DKIM (RFC 6376) signatures, and
// DMARC's relaxed alignment of an authenticated domain with the From
// domain (RFC 7489 §3.1). The inbound area's Authentication-Results and the
// delivery engine's trust in feedback reports both build on it.
package mailauth

import (
	"bytes"
	"context"
	"net"
	"strings"
	"time"

	"blitiri.com.ar/go/spf"
	"github.com/emersion/go-msgauth/dkim"
	"golang.org/x/net/publicsuffix"
)

// Timeout bounds all of a message's DNS work, so a dead resolver delays
// the 250 (and the sender's retry clock) by seconds, not minutes.
const Timeout = 10 * time.Second

// MaxDKIMSignatures caps the signatures verified per message: each costs a
// DNS lookup and an RSA check, and a message can carry thousands.
const MaxDKIMSignatures = 10

// Resolver answers the SPF and DKIM lookups; *net.Resolver implements it.
type Resolver = spf.DNSResolver

// Sender is who handed a message over in the SMTP transaction.
type Sender struct {
	IP       net.IP // the connecting client's address
	Helo     string // the name it gave in EHLO/HELO
	MailFrom string // the reverse path; "" for the null sender <>
}

// SPFDomain is the domain SPF checks for s: the MAIL FROM domain, or the
// HELO name for the null sender.
func (s Sender) SPFDomain() string {
	if d := DomainOf(s.MailFrom); d != "" {
		return d
	}
	return strings.ToLower(strings.TrimSuffix(s.Helo, "."))
}

// SPF evaluates the SPF policy of s.SPFDomain() for s.IP. The result is ""
// when there is nothing to check (no address or no domain).
func SPF(ctx context.Context, r Resolver, s Sender) (spf.Result, error) {
	if s.IP == nil || s.SPFDomain() == "" {
		return "", nil
	}
	return spf.CheckHostWithSender(s.IP, s.Helo, s.MailFrom, spf.WithContext(ctx), spf.WithResolver(r))
}

// DKIM verifies the message's signatures, at most MaxDKIMSignatures.
func DKIM(ctx context.Context, r Resolver, raw []byte) []*dkim.Verification {
	lookupTXT := func(name string) ([]string, error) { return r.LookupTXT(ctx, name) }
	verifs, _ := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{LookupTXT: lookupTXT, MaxVerifications: MaxDKIMSignatures})
	return verifs
}

// Aligned reports DMARC identifier alignment of an authenticated domain d
// with the From domain: strict needs the same domain, relaxed the same
// organizational domain (RFC 7489 §3.1).
func Aligned(d, from string, strict bool) bool {
	d, from = strings.ToLower(d), strings.ToLower(from)
	if d == "" {
		return false
	}
	if d == from {
		return true
	}
	return !strict && OrgDomain(d) == OrgDomain(from)
}

// OrgDomain is the registrable domain (public suffix plus one label), or
// the domain itself when the suffix list cannot say.
func OrgDomain(d string) string {
	org, err := publicsuffix.EffectiveTLDPlusOne(d)
	if err != nil {
		return d
	}
	return org
}

// DomainOf is the lowercased domain of an address, "" without one.
func DomainOf(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(addr[at+1:], "<> "), "."))
}
