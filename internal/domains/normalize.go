package domains

import (
	"net"
	"strings"

	"golang.org/x/net/idna"

	"mailroom/internal/apierr"
)

// Normalize turns what a user typed as a sending domain into the canonical
// form Mailroom stores and publishes records for: trimmed, without the root
// dot, lowercased, internationalised labels in punycode (IDNA2008 lookup
// rules, RFC 5891), and a syntactically valid hostname (RFC 1123 §2.1) with
// at least two labels. Anything else is a 400 invalid_request saying why.
func Normalize(input string) (string, error) {
	s := strings.TrimSpace(input)
	s = strings.TrimSuffix(s, ".")
	s = strings.ToLower(s)
	if s == "" {
		return "", invalidDomain(input, "it is empty")
	}
	if strings.HasPrefix(s, "[") || net.ParseIP(s) != nil {
		return "", invalidDomain(input, "an IP address is not a domain")
	}
	if strings.Contains(s, "*") {
		return "", invalidDomain(input, "wildcards are not allowed; add the exact domain")
	}
	ascii, err := idna.Lookup.ToASCII(s)
	if err != nil {
		return "", invalidDomain(input, "it is not a valid internationalised domain name")
	}
	if reason := hostnameProblem(ascii); reason != "" {
		return "", invalidDomain(input, reason)
	}
	return ascii, nil
}

// hostnameProblem says what is wrong with an ASCII hostname, or "" if nothing.
func hostnameProblem(s string) string {
	if len(s) > 253 {
		return "it is longer than 253 characters"
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return "it needs at least two labels, like example.com"
	}
	for _, l := range labels {
		switch {
		case l == "":
			return "it has an empty label (two dots in a row, or a leading dot)"
		case len(l) > 63:
			return "a label is longer than 63 characters"
		case l[0] == '-' || l[len(l)-1] == '-':
			return "a label starts or ends with a hyphen"
		}
		for i := range len(l) {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "labels may contain only letters, digits and hyphens"
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "the top-level label is all digits"
	}
	return ""
}

func invalidDomain(input, reason string) *apierr.Error {
	if len(input) > 100 {
		input = input[:100] + "…"
	}
	return apierr.InvalidRequest("%q is not a valid domain name: %s.", input, reason)
}
