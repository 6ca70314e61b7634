package delivery

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// CheckHeloName lists what would make receivers distrust mail this node
// delivers directly to MX hosts under the EHLO name helo: a name that is
// not public (localhost, *.localhost, no dot), one that does not resolve
// through lookup, or one none of whose addresses is this node's (one of
// outboundIPs, MAILROOM_OUTBOUND_IPS, or of the local interfaces in
// local). Receivers check that the EHLO name resolves, that it matches the
// connecting address's PTR, and SPF-check it for bounces (HELO identity,
// RFC 7208 section 2.3). The node still starts: the check is a loud
// warning, since a test or a private relay set-up may be what is wanted.
func CheckHeloName(ctx context.Context, lookup func(ctx context.Context, host string) ([]string, error), helo string, outboundIPs []string, local []netip.Addr) []string {
	name := strings.ToLower(strings.TrimSuffix(helo, "."))
	if !publicName(name) {
		return []string{fmt.Sprintf("MAILROOM_HELO_NAME %q is not a public host name: receivers expect the EHLO name to resolve to the sending address and to match its PTR record; "+
			"set MAILROOM_HELO_NAME (or MAILROOM_SERVICE_DOMAIN, whose mail.<domain> is the default) to a name whose A/AAAA record is this node's public address", helo)}
	}
	addrs, err := lookup(ctx, name)
	if err != nil || len(addrs) == 0 {
		return []string{fmt.Sprintf("MAILROOM_HELO_NAME %q does not resolve (%v): publish an A/AAAA record for it with this node's public address, and a PTR record back to it", helo, err)}
	}
	mine := map[netip.Addr]bool{}
	var prefixes []netip.Prefix
	for _, s := range outboundIPs {
		if p, err := netip.ParsePrefix(s); err == nil {
			prefixes = append(prefixes, p)
		} else if a, err := netip.ParseAddr(s); err == nil {
			mine[a.Unmap()] = true
		}
	}
	for _, a := range local {
		mine[a.Unmap()] = true
	}
	for _, s := range addrs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		a = a.Unmap()
		if mine[a] {
			return nil
		}
		for _, p := range prefixes {
			if p.Contains(a) {
				return nil
			}
		}
	}
	return []string{fmt.Sprintf("MAILROOM_HELO_NAME %q resolves to %s, not to an address of this node (MAILROOM_OUTBOUND_IPS or a local interface): "+
		"receivers will see a HELO name that does not match the connection", helo, strings.Join(addrs, ", "))}
}

// publicName reports whether a host name could be reached from the
// Internet: not localhost, *.localhost, a single label, or a private TLD.
func publicName(name string) bool {
	return name != "localhost" && !strings.HasSuffix(name, ".localhost") && strings.Contains(name, ".") &&
		!strings.HasSuffix(name, ".local") && !strings.HasSuffix(name, ".internal") && !strings.HasSuffix(name, ".invalid")
}

// CheckPublicURL lists what keeps the links built on MAILROOM_PUBLIC_URL
// from working in recipients' mail: the one-click List-Unsubscribe of
// marketing mail must be https (RFC 8058; Gmail ignores others) and, like
// the unsubscribe and preference links in bodies, reachable from outside.
func CheckPublicURL(publicURL string) []string {
	u, err := url.Parse(publicURL)
	if err != nil {
		return nil // config refuses it at load
	}
	var out []string
	if u.Scheme != "https" {
		out = append(out, fmt.Sprintf("MAILROOM_PUBLIC_URL %q is not https: marketing mail's one-click List-Unsubscribe links are built on it and Gmail and Yahoo ignore one-click links that are not https; "+
			"set MAILROOM_PUBLIC_URL to this node's public https:// address", publicURL))
	}
	host := strings.ToLower(u.Hostname())
	if a, err := netip.ParseAddr(host); (err == nil && (a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast())) || (err != nil && !publicName(host)) {
		out = append(out, fmt.Sprintf("MAILROOM_PUBLIC_URL %q is not reachable from the Internet: recipients cannot open the unsubscribe, preference and tracking links in mail from this node", publicURL))
	}
	return out
}

// LocalAddrs lists this host's interface addresses.
func LocalAddrs() []netip.Addr {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}
