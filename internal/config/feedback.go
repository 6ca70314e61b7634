package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// Feedback says which abuse reports (ARF, RFC 5965, at fbl@) Mailroom
// believes; the others are accepted and ignored (docs/decisions.md,
// "Reports are believed only when they can be trusted").
type Feedback struct {
	// Senders are feedback-loop operators added to the built-in list
	// (delivery.DefaultFeedbackSenders): a report whose From is one of
	// them, authenticated by an aligned DKIM signature or SPF pass, is
	// believed (MAILROOM_FBL_SENDERS, comma or space separated; an entry
	// is an address, such as fbl@isp.example, or a domain, which covers its
	// subdomains; lower-cased; default none).
	Senders []string
	// TrustedIPs are clients whose reports are believed without
	// authentication: a relay of the operator's own that forwards the
	// feedback address's mail (MAILROOM_FBL_TRUSTED_IPS, comma separated
	// addresses or prefixes such as 192.0.2.10 or 10.0.0.0/8; default none).
	TrustedIPs []netip.Prefix
}

func loadFeedback(get func(k, def string) string) (Feedback, []error) {
	var f Feedback
	var errs []error
	for _, e := range strings.FieldsFunc(get("MAILROOM_FBL_SENDERS", ""), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		e = strings.ToLower(e)
		domain := e
		if at := strings.LastIndexByte(e, '@'); at >= 0 {
			domain = e[at+1:]
			if at == 0 || strings.ContainsAny(e[:at], "@<>\"") {
				domain = ""
			}
		}
		if !isDomainName(domain) {
			errs = append(errs, fmt.Errorf("MAILROOM_FBL_SENDERS: %q is not a domain (such as fbl.isp.example) or an address (such as staff@isp.example)", e))
			continue
		}
		f.Senders = append(f.Senders, e)
	}
	for _, v := range strings.Split(get("MAILROOM_FBL_TRUSTED_IPS", ""), ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				errs = append(errs, fmt.Errorf("MAILROOM_FBL_TRUSTED_IPS: %q is not an IP address or prefix (such as 192.0.2.10 or 10.0.0.0/8)", v))
				continue
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		f.TrustedIPs = append(f.TrustedIPs, p.Masked())
	}
	return f, errs
}
