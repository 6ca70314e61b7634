package domains

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"blitiri.com.ar/go/spf"
)

// SPFEvaluator checks a domain's published SPF policy the way receivers
// do, with an RFC 7208 evaluator (blitiri.com.ar/go/spf: the 10-lookup and
// 2-void-lookup limits, one record only), for each address this
// installation sends from. A record that merely contains the right
// mechanisms is not enough: two v=spf1 records, a policy that breaks the
// lookup limit or a softfail for one of our addresses must not verify.
type SPFEvaluator struct {
	// IPs are the outbound addresses (MAILROOM_OUTBOUND_IPS; a prefix
	// counts by its first address). Empty: the HELO name's addresses.
	IPs  []string
	Helo string
	// Resolver does the evaluator's lookups (the configured resolver).
	Resolver *net.Resolver
}

// NewResolver returns a net.Resolver that asks addr (host:port, e.g.
// MAILROOM_DNS_RESOLVER) or, when addr is "", the system's.
func NewResolver(addr string) *net.Resolver {
	if addr == "" {
		return net.DefaultResolver
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// SPF results as Evaluate reports them (RFC 7208 section 2.6).
const (
	SPFPass      = "pass"
	SPFTempError = "temperror"
)

// Evaluate returns "pass" when every outbound address passes domain's SPF
// policy, else the first other result ("fail", "softfail", "neutral",
// "none", "permerror") with the address and reason, or "temperror" when
// DNS did not answer (then nothing should change). "" means there is no
// address to evaluate.
func (e *SPFEvaluator) Evaluate(ctx context.Context, domain string) (result, detail string) {
	ips := e.addresses(ctx)
	if len(ips) == 0 {
		return "", ""
	}
	for _, ip := range ips {
		res, err := spf.CheckHostWithSender(ip, e.Helo, "postmaster@"+domain, spf.WithContext(ctx), spf.WithResolver(e.Resolver))
		if res == spf.Pass {
			continue
		}
		why := string(res)
		switch {
		case errors.Is(err, spf.ErrMultipleRecords):
			why = "more than one v=spf1 record is published; receivers treat that as a permanent error: merge them into one"
		case errors.Is(err, spf.ErrLookupLimitReached), errors.Is(err, spf.ErrVoidLookupLimitReached):
			why = "the record needs more than 10 DNS lookups (or 2 void ones); receivers stop there with a permanent error"
		case res == spf.SoftFail || res == spf.Fail || res == spf.Neutral:
			why = fmt.Sprintf("%s does not pass (%s); the record must authorise it", ip, res)
		case res == spf.None:
			why = "no SPF record is published"
		case err != nil:
			why = err.Error()
		}
		return strings.ToLower(string(res)), why
	}
	return SPFPass, ""
}

func (e *SPFEvaluator) addresses(ctx context.Context) []net.IP {
	var out []net.IP
	for _, s := range e.IPs {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, net.IP(p.Addr().AsSlice()))
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, net.IP(a.AsSlice()))
		}
	}
	if len(out) > 0 || e.Helo == "" || e.Resolver == nil {
		return out
	}
	addrs, err := e.Resolver.LookupIPAddr(ctx, e.Helo)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		out = append(out, a.IP)
	}
	return out
}
