package outbound

import (
	"strings"
)

// Bounce types returned by Classify. "hard" means the address will not
// accept mail (suppress it); "soft" means this attempt failed but a later
// one may succeed. They correspond to the "Permanent" and "Transient"
// types some providers use.
const (
	BounceHard = "hard"
	BounceSoft = "soft"
)

// Bounce subtypes returned by Classify.
const (
	SubtypeMailboxUnavailable = "mailbox_unavailable"
	SubtypeMailboxFull        = "mailbox_full"
	SubtypeMessageTooLarge    = "message_too_large"
	SubtypePolicy             = "policy"
	SubtypeSpam               = "spam"
	SubtypeDNSFailure         = "dns_failure"
	SubtypeConnection         = "connection"
	SubtypeGeneral            = "general"
)

// Classify maps an SMTP reply (code, RFC 3463 enhanced code such as
// "5.1.1", and text) to a bounce type and subtype. The enhanced code wins
// when present; the text refines it, since many servers send generic codes
// with telling words ("mailbox full" with 5.0.0). Code 0 means no server
// answered (connection or DNS failure described by message).
func Classify(code int, enhanced, message string) (bounceType, subtype string) {
	bounceType = BounceHard
	class := 0
	if len(enhanced) > 0 && (enhanced[0] == '4' || enhanced[0] == '5') {
		class = int(enhanced[0] - '0')
	} else if code >= 400 && code < 600 {
		class = code / 100
	}
	if class == 4 || (class == 0 && code == 0) {
		bounceType = BounceSoft
	}
	msg := strings.ToLower(message)

	if code == 0 && class == 0 {
		if containsAny(msg, "no such host", "nxdomain", "null mx", "no mx", "dns") {
			if containsAny(msg, "no such host", "nxdomain", "null mx", "accepts no mail") {
				return BounceHard, SubtypeDNSFailure
			}
			return BounceSoft, SubtypeDNSFailure
		}
		return BounceSoft, SubtypeConnection
	}

	// Text first for the cases servers habitually mislabel.
	switch {
	case containsAny(msg, "spam", "blocklist", "blacklist", "blocked using", "listed at", "spamhaus", "junk", "reputation"):
		return bounceType, SubtypeSpam
	case containsAny(msg, "mailbox full", "mailbox is full", "quota", "over quota", "insufficient storage", "out of storage"):
		return BounceSoft, SubtypeMailboxFull
	case containsAny(msg, "too large", "too big", "size limit", "exceeds the maximum", "message size"):
		return bounceType, SubtypeMessageTooLarge
	}

	switch sub := enhancedSubject(enhanced); {
	case sub == "5.2.2" || sub == "4.2.2":
		return BounceSoft, SubtypeMailboxFull
	case sub == "5.3.4" || sub == "5.2.3" || sub == "4.3.4" || sub == "4.2.3" || code == 552 && containsAny(msg, "size"):
		return bounceType, SubtypeMessageTooLarge
	case strings.HasPrefix(sub, "5.1.") && sub != "5.1.7" && sub != "5.1.8" && sub != "5.1.0" || sub == "5.2.1":
		if sub == "5.1.2" || sub == "5.1.10" {
			return bounceType, SubtypeDNSFailure
		}
		return bounceType, SubtypeMailboxUnavailable
	case sub == "4.1.2" || sub == "4.4.3" || sub == "5.4.4" || sub == "4.4.4":
		return bounceType, SubtypeDNSFailure
	case strings.HasPrefix(sub, "5.7.") || strings.HasPrefix(sub, "4.7.") || sub == "5.1.7" || sub == "5.1.8":
		return bounceType, SubtypePolicy
	case strings.HasPrefix(sub, "4.4.") || strings.HasPrefix(sub, "5.4."):
		return bounceType, SubtypeConnection
	case sub == "" && (code == 550 || code == 551 || code == 553) &&
		containsAny(msg, "user unknown", "no such user", "does not exist", "unknown user", "invalid recipient", "recipient rejected", "not found", "unavailable"):
		return bounceType, SubtypeMailboxUnavailable
	case sub == "" && (code == 421 || code == 554) && containsAny(msg, "policy", "rejected", "denied"):
		return bounceType, SubtypePolicy
	case containsAny(msg, "user unknown", "no such user", "does not exist", "unknown user", "mailbox unavailable", "address rejected"):
		return bounceType, SubtypeMailboxUnavailable
	case containsAny(msg, "policy", "not authorized", "authentication", "dmarc", "spf", "dkim"):
		return bounceType, SubtypePolicy
	}
	return bounceType, SubtypeGeneral
}

// enhancedSubject normalizes "5.1.1" style codes; anything malformed is "".
func enhancedSubject(enhanced string) string {
	parts := strings.Split(strings.TrimSpace(enhanced), ".")
	if len(parts) != 3 || (parts[0] != "4" && parts[0] != "5") {
		return ""
	}
	for _, p := range parts[1:] {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return ""
		}
	}
	return strings.Join(parts, ".")
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
