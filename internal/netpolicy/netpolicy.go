// Package netpolicy is the one address policy of every outbound connection
// a message or an event can steer: webhook deliveries (and automations'
// webhook steps), direct MX delivery and MTA-STS policy fetches (RFC 8461).
// A name is judged by the addresses it resolves to, at connect time, so
// DNS cannot be changed under a check made earlier. The operator's relay
// (MAILROOM_OUTBOUND=smtp://...) is configuration, not input, and is not
// checked.
package netpolicy

import (
	"context"
	"fmt"
	"net/netip"
	"syscall"
)

// Policy decides which addresses a connection may reach.
type Policy struct {
	allowPrivate bool
	blocked      []netip.Prefix
}

// New returns the policy: public unicast addresses only, or, with
// allowPrivate (development and test sinks), any address.
func New(allowPrivate bool) *Policy {
	return &Policy{allowPrivate: allowPrivate, blocked: []netip.Prefix{
		// Ranges that lead into the operator's own network, which netip's
		// predicates do not already cover.
		netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
		netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
		netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
		netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
		netip.MustParsePrefix("240.0.0.0/4"),    // reserved, includes broadcast
		netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64 (RFC 8215): the operator's translator
		netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated, still routed somewhere)
		netip.MustParsePrefix("100::/64"),       // discard-only
		netip.MustParsePrefix("2001:db8::/32"),  // documentation
		netip.MustParsePrefix("2001:2::/48"),    // benchmarking
	}}
}

// Allowed reports whether a connection may go to a.
func (p *Policy) Allowed(a netip.Addr) bool {
	return p.allowPrivate || p.public(a)
}

// public reports whether a is a public unicast address. An IPv6 address
// that carries an IPv4 one a translator or tunnel would reach is judged by
// that IPv4 address (both, for Teredo's server and client).
func (p *Policy) public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() {
		return false
	}
	if a.Is6() {
		if v4s, ok := embedded(a); ok {
			for _, v4 := range v4s {
				if !p.public(v4) {
					return false
				}
			}
			return true
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() {
		return false
	}
	for _, n := range p.blocked {
		if n.Contains(a) {
			return false
		}
	}
	return true
}

var (
	translated = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated, RFC 2765 ::ffff:0:a.b.c.d
	compatible = netip.MustParsePrefix("::/96")           // IPv4-compatible (deprecated)
	nat64      = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64 prefix, RFC 6052
	sixToFour  = netip.MustParsePrefix("2002::/16")       // 6to4, RFC 3056
	teredo     = netip.MustParsePrefix("2001::/32")       // Teredo, RFC 4380
)

// embedded returns the IPv4 addresses an IPv6 address a carries, and
// whether it carries any. :: and ::1 carry none: they are judged as they
// are (unspecified, loopback), so they are refused.
func embedded(a netip.Addr) ([]netip.Addr, bool) {
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case translated.Contains(a), nat64.Contains(a):
		return []netip.Addr{v4(12)}, true
	case compatible.Contains(a):
		if a.IsUnspecified() || a.IsLoopback() {
			return nil, false
		}
		return []netip.Addr{v4(12)}, true
	case sixToFour.Contains(a):
		return []netip.Addr{v4(2)}, true
	case teredo.Contains(a):
		// The server in clear, the client's address inverted.
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{v4(4), client}, true
	}
	return nil, false
}

// BlockedError is the dial error for an address the policy refuses. Its
// text is the same whatever lies behind the address, so a refusal tells
// nothing about what the node could reach.
type BlockedError struct{ Addr netip.Addr }

func (e *BlockedError) Error() string {
	return fmt.Sprintf("address not allowed by the outbound policy (%s)", e.Addr)
}

// Control is a net.Dialer ControlContext: it runs after DNS resolution,
// once per address dialled and before any packet is sent, so a name that
// resolves (or re-resolves) to a refused address is still refused.
func (p *Policy) Control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("netpolicy: unexpected dial address %q: %w", address, err)
	}
	if !p.Allowed(ap.Addr()) {
		return &BlockedError{Addr: ap.Addr().Unmap()}
	}
	return nil
}
