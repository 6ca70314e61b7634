package sending

import "strings"

// Test address kinds: the four reserved mailboxes at the service domain.
const (
	TestDelivered  = "delivered"
	TestBounced    = "bounced"
	TestComplained = "complained"
	TestSuppressed = "suppressed"
)

// ClassifyTestAddress reports whether email is one of the reserved test
// addresses at serviceDomain: delivered@, bounced@, complained@ or
// suppressed@, optionally sub-addressed as delivered+<label>@. The local part
// and domain compare without case; kind is lowercase and label keeps the
// caller's spelling so it can be told apart in the log.
func ClassifyTestAddress(email, serviceDomain string) (kind, label string, ok bool) {
	at := strings.LastIndexByte(email, '@')
	if at < 0 || serviceDomain == "" {
		return "", "", false
	}
	local, domain := email[:at], email[at+1:]
	if !strings.EqualFold(strings.TrimSuffix(domain, "."), strings.TrimSuffix(serviceDomain, ".")) {
		return "", "", false
	}
	base, label, _ := strings.Cut(local, "+")
	switch k := strings.ToLower(base); k {
	case TestDelivered, TestBounced, TestComplained, TestSuppressed:
		return k, label, true
	}
	return "", "", false
}
