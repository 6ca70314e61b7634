package delivery

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"slices"
	"strings"

	"blitiri.com.ar/go/spf"

	"mailroom/internal/mailauth"
)

// DefaultFeedbackSenders are the big feedback loops' report senders,
// believed when authenticated (MAILROOM_FBL_SENDERS adds to them). An
// address entry is used where the operator's domain is also a mailbox
// provider's, so that its users, whose mail it signs too, cannot complain
// in its name.
var DefaultFeedbackSenders = []string{
	"staff@hotmail.com",  // Microsoft JMRP (Outlook.com, Hotmail, Live)
	"arf.mail.yahoo.com", // Yahoo and AOL complaint feedback loop
	"scomp@aol.net",      // AOL's earlier feedback loop
	"senderscore.net",    // loops run by Validity (Return Path), e.g. Comcast's
}

// FeedbackSources says which abuse reports are believed: those from a
// listed sender, authenticated, or handed over by a trusted client.
type FeedbackSources struct {
	// Senders are addresses, or domains (covering their subdomains), that a
	// report's From must name; DefaultFeedbackSenders plus the operator's.
	Senders []string
	// TrustedIPs are clients whose reports need no authentication.
	TrustedIPs []netip.Prefix
	// Resolver answers the SPF and DKIM lookups (nil: the system's).
	Resolver mailauth.Resolver
}

// trusted says whether a report can be believed and, when not, why: the
// client is a trusted one, or the report's From is a listed sender and a
// DKIM signature that verifies, or SPF that passes, is aligned with it.
func (f *FeedbackSources) trusted(ctx context.Context, from mailauth.Sender, raw []byte) (bool, string) {
	if ip, ok := netip.AddrFromSlice(from.IP); ok && slices.ContainsFunc(f.TrustedIPs, func(p netip.Prefix) bool { return p.Contains(ip.Unmap()) }) {
		return true, ""
	}
	author, err := reportAuthor(raw)
	if err != nil {
		return false, err.Error()
	}
	if !f.listed(author) {
		return false, "From " + author + " is not a known feedback-loop sender"
	}
	ctx, cancel := context.WithTimeout(ctx, mailauth.Timeout)
	defer cancel()
	r := f.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	domain := mailauth.DomainOf(author)
	for _, v := range mailauth.DKIM(ctx, r, raw) {
		if v.Err == nil && mailauth.Aligned(v.Domain, domain, false) {
			return true, ""
		}
	}
	if res, _ := mailauth.SPF(ctx, r, from); res == spf.Pass && mailauth.Aligned(from.SPFDomain(), domain, false) {
		return true, ""
	}
	return false, "From " + author + " is not authenticated (no aligned DKIM signature or SPF pass)"
}

// listed reports whether addr is a listed sender: the address itself, or
// at a listed domain or one of its subdomains.
func (f *FeedbackSources) listed(addr string) bool {
	addr = strings.ToLower(addr)
	domain := mailauth.DomainOf(addr)
	for _, s := range f.Senders {
		if strings.Contains(s, "@") {
			if s == addr {
				return true
			}
		} else if domain == s || strings.HasSuffix(domain, "."+s) {
			return true
		}
	}
	return false
}

// reportAuthor is the one address in the report's From field.
func reportAuthor(raw []byte) (string, error) {
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	if end < 0 {
		end = bytes.Index(raw, []byte("\n\n"))
	}
	if end < 0 {
		end = len(raw)
	}
	m, err := mail.ReadMessage(bytes.NewReader(append(raw[:end:end], "\r\n\r\n"...)))
	if err != nil {
		return "", fmt.Errorf("unreadable header: %v", err)
	}
	list, err := m.Header.AddressList("From")
	if err != nil || len(list) != 1 {
		return "", fmt.Errorf("no single From address")
	}
	return strings.ToLower(list[0].Address), nil
}
