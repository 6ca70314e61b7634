package delivery

import (
	"context"
	"fmt"
	"net"
	"net/netip"
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
	if name == "localhost" || strings.HasSuffix(name, ".localhost") || !strings.Contains(name, ".") ||
		strings.HasSuffix(name, ".local") || strings.HasSuffix(name, ".internal") || strings.HasSuffix(name, ".invalid") {
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
