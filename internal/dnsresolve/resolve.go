// Package dnsresolve is the stub resolver Mailroom uses for domain
// verification, MX lookup and PTR checks. It asks one configured recursive
// server (MAILROOM_DNS_RESOLVER) directly with miekg/dns, so operators and
// tests can point verification at a server of their choice, or the servers in
// /etc/resolv.conf when none is configured.
//
// Queries go over UDP with an EDNS0 buffer of 1232 bytes (the DNS Flag Day
// 2020 size) and are retried over TCP when the reply is truncated
// (RFC 7766 §5). Names are always treated as fully qualified; search domains
// are never applied.
package dnsresolve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// ErrNotFound reports that a name does not exist (NXDOMAIN) or holds no
// records of the asked type. Any other failure (timeout, SERVFAIL, REFUSED)
// is a different error, so callers can tell "not published" from "could not
// ask".
var ErrNotFound = errors.New("dnsresolve: no such record")

// DefaultTimeout bounds one lookup when the context carries no earlier deadline.
const DefaultTimeout = 3 * time.Second

// ednsSize is the UDP payload size advertised to servers.
const ednsSize = 1232

// MX is one mail exchanger.
type MX struct {
	Host string // lowercased, without trailing dot
	Pref uint16
}

// Resolver looks up records. The zero value is not usable; call New.
// A Resolver is safe for concurrent use.
type Resolver struct {
	servers []string      // host:port; empty means use system
	system  *net.Resolver // used only when no server could be configured
	timeout time.Duration
}

// New returns a resolver asking addr (host:port; port 53 when omitted), or the
// servers in /etc/resolv.conf when addr is "". If resolv.conf cannot be read,
// lookups go through Go's own system resolver.
func New(addr string) *Resolver {
	r := &Resolver{timeout: DefaultTimeout}
	if addr != "" {
		r.servers = []string{withPort(addr, "53")}
		return r
	}
	cfg, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil || len(cfg.Servers) == 0 {
		r.system = net.DefaultResolver
		return r
	}
	for _, s := range cfg.Servers {
		r.servers = append(r.servers, net.JoinHostPort(s, cfg.Port))
	}
	return r
}

func withPort(addr, port string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), port)
}

// LookupTXT returns every TXT record at name, each record's character-strings
// joined without separator (RFC 7208 §3.3, RFC 6376 §3.6.2.2).
func (r *Resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	if r.system != nil {
		txt, err := r.system.LookupTXT(ctx, name)
		return txt, systemErr(err)
	}
	rrs, err := r.query(ctx, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		var b strings.Builder
		for _, part := range rr.(*dns.TXT).Txt {
			b.WriteString(unescapeTXT(part))
		}
		out = append(out, b.String())
	}
	return out, nil
}

// LookupMX returns the mail exchangers at name sorted by preference.
func (r *Resolver) LookupMX(ctx context.Context, name string) ([]MX, error) {
	var out []MX
	if r.system != nil {
		mxs, err := r.system.LookupMX(ctx, name)
		if err != nil {
			return nil, systemErr(err)
		}
		for _, mx := range mxs {
			out = append(out, MX{Host: hostname(mx.Host), Pref: mx.Pref})
		}
	} else {
		rrs, err := r.query(ctx, name, dns.TypeMX)
		if err != nil {
			return nil, err
		}
		for _, rr := range rrs {
			mx := rr.(*dns.MX)
			out = append(out, MX{Host: hostname(mx.Mx), Pref: mx.Preference})
		}
	}
	slices.SortStableFunc(out, func(a, b MX) int { return int(a.Pref) - int(b.Pref) })
	return out, nil
}

// LookupCNAME returns the target of the CNAME record at name (one step, not
// the end of the chain), lowercased and without trailing dot.
func (r *Resolver) LookupCNAME(ctx context.Context, name string) (string, error) {
	if r.system != nil {
		// Go's resolver returns the end of the chain, or name itself when
		// there is no alias; the latter is our not-found.
		target, err := r.system.LookupCNAME(ctx, name)
		if err != nil {
			return "", systemErr(err)
		}
		if hostname(target) == hostname(name) {
			return "", fmt.Errorf("%w: CNAME %s", ErrNotFound, name)
		}
		return hostname(target), nil
	}
	rrs, err := r.query(ctx, name, dns.TypeCNAME)
	if err != nil {
		return "", err
	}
	return hostname(rrs[0].(*dns.CNAME).Target), nil
}

// LookupHost returns the IPv4 and IPv6 addresses of name. It fails only when
// neither family yields an address.
func (r *Resolver) LookupHost(ctx context.Context, name string) ([]string, error) {
	if r.system != nil {
		addrs, err := r.system.LookupHost(ctx, name)
		return addrs, systemErr(err)
	}
	var (
		wg   sync.WaitGroup
		rrs  [2][]dns.RR
		errs [2]error
	)
	for i, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
		wg.Go(func() { rrs[i], errs[i] = r.query(ctx, name, t) })
	}
	wg.Wait()
	var out []string
	for _, set := range rrs {
		for _, rr := range set {
			switch rr := rr.(type) {
			case *dns.A:
				out = append(out, rr.A.String())
			case *dns.AAAA:
				out = append(out, rr.AAAA.String())
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	return nil, errors.Join(errs[0], errs[1])
}

// LookupAddr returns the host names in the PTR records for ip, lowercased and
// without trailing dot.
func (r *Resolver) LookupAddr(ctx context.Context, ip string) ([]string, error) {
	var hosts []string
	if r.system != nil {
		names, err := r.system.LookupAddr(ctx, ip)
		if err != nil {
			return nil, systemErr(err)
		}
		for _, n := range names {
			hosts = append(hosts, hostname(n))
		}
		return hosts, nil
	}
	rev, err := dns.ReverseAddr(ip)
	if err != nil {
		return nil, fmt.Errorf("dnsresolve: PTR %q: not an IP address", ip)
	}
	rrs, err := r.query(ctx, rev, dns.TypePTR)
	if err != nil {
		return nil, err
	}
	for _, rr := range rrs {
		hosts = append(hosts, hostname(rr.(*dns.PTR).Ptr))
	}
	return hosts, nil
}

// query asks the configured servers in turn and returns the answer records of
// qtype. A definite answer (records, NXDOMAIN or NODATA) from any server ends
// the search; failures move on to the next server.
func (r *Resolver) query(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	qname := dns.Fqdn(name)
	label := dns.TypeToString[qtype] + " " + strings.TrimSuffix(qname, ".")
	if _, ok := dns.IsDomainName(qname); !ok || name == "" {
		return nil, fmt.Errorf("dnsresolve: %s: invalid name", label)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	m := new(dns.Msg)
	m.SetQuestion(qname, qtype)
	m.SetEdns0(ednsSize, false)

	var lastErr error
	for i, server := range r.servers {
		// Share what is left of the deadline among the servers still to try,
		// so one dead server cannot use up the whole lookup.
		actx, acancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok {
			actx, acancel = context.WithTimeout(ctx, time.Until(dl)/time.Duration(len(r.servers)-i))
		}
		resp, err := exchange(actx, m, server)
		acancel()
		if err != nil {
			lastErr = fmt.Errorf("dnsresolve: %s via %s: %w", label, server, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		switch resp.Rcode {
		case dns.RcodeSuccess:
		case dns.RcodeNameError:
			return nil, fmt.Errorf("%w: %s (NXDOMAIN)", ErrNotFound, label)
		default:
			lastErr = fmt.Errorf("dnsresolve: %s via %s: server answered %s", label, server, dns.RcodeToString[resp.Rcode])
			continue
		}
		var rrs []dns.RR
		for _, rr := range resp.Answer {
			if rr.Header().Rrtype == qtype {
				rrs = append(rrs, rr)
			}
		}
		if len(rrs) == 0 {
			return nil, fmt.Errorf("%w: %s (no data)", ErrNotFound, label)
		}
		return rrs, nil
	}
	return nil, lastErr
}

// exchange sends m over UDP and again over TCP when the reply is truncated.
func exchange(ctx context.Context, m *dns.Msg, server string) (*dns.Msg, error) {
	udp := &dns.Client{Net: "udp", UDPSize: ednsSize}
	resp, _, err := udp.ExchangeContext(ctx, m, server)
	// A cut reply may also fail to unpack; the TC bit still says to use TCP.
	if resp == nil || !resp.Truncated {
		return resp, err
	}
	tcp := &dns.Client{Net: "tcp"}
	resp, _, err = tcp.ExchangeContext(ctx, m, server)
	return resp, err
}

// unescapeTXT undoes miekg/dns's presentation escaping of a character-string
// (\X for a quote or backslash, \DDD for unprintable bytes) to give back the
// bytes on the wire.
func unescapeTXT(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b = append(b, s[i])
			continue
		}
		i++
		if i+2 < len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
			b = append(b, byte(int(s[i]-'0')*100+int(s[i+1]-'0')*10+int(s[i+2]-'0')))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// systemErr maps Go resolver errors onto ErrNotFound.
func systemErr(err error) error {
	var de *net.DNSError
	if errors.As(err, &de) && de.IsNotFound {
		return fmt.Errorf("%w: %s", ErrNotFound, de.Name)
	}
	return err
}

func hostname(s string) string {
	return strings.ToLower(strings.TrimSuffix(s, "."))
}
