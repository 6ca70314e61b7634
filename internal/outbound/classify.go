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

// Suppresses reports whether a failure says the address itself can never
// receive mail, which is the only case that puts it on the suppression
// list: a permanent refusal at RCPT (or in a later delivery status
// notification, StageReport) classified as mailbox_unavailable (5.1.x
// other than the sender-side 5.1.7/5.1.8, 5.2.1, user-unknown texts) or a
// permanent DNS failure of the recipient domain (no such domain, null MX,
// 5.1.2/5.1.10). Policy and reputation refusals (5.7.x, blocklists, spam
// verdicts, DMARC), refusals at MAIL FROM or DATA, and every connection
// failure say something about the sender or the path, not the recipient:
// they bounce the email but never suppress, so one blocklisting cannot
// permanently cut a sender off from valid recipients.
func Suppresses(stage string, code int, enhanced, message string, temporary bool) bool {
	if temporary {
		return false
	}
	switch stage {
	case StageConnect:
		// No server spoke and the transport called it permanent: the
		// domain does not exist or publishes a null MX (RFC 7505).
		return code == 0 && containsAny(strings.ToLower(message), "no such host", "nxdomain", "null mx", "accepts no mail", "has no domain")
	case StageRcpt, StageReport:
	default:
		return false
	}
	typ, sub := Classify(code, enhanced, message)
	if typ != BounceHard {
		return false
	}
	return sub == SubtypeMailboxUnavailable || sub == SubtypeDNSFailure
}

// IsPolicyRefusal reports whether a classified bounce is a refusal for
// policy or reputation (blocklist, spam verdict, authentication, DMARC):
// the kind of answer a per-destination circuit breaker counts.
func IsPolicyRefusal(bounceType, subtype string) bool {
	return subtype == SubtypePolicy || subtype == SubtypeSpam
}

// IsRateLimited reports whether a reply asks the sender to slow down: the
// temporary "too much mail from you" answers of the large receivers, for
// example Gmail's "421-4.7.28 ... unusual rate of unsolicited mail" and
// "4.7.0 ... rate limited", Microsoft's "451 4.7.500 Server busy" and
// "4.7.650 ... temporarily rate limited", Yahoo's "421 4.7.0 [TSS04]
// Messages ... temporarily deferred due to unexpected volume or user
// complaints", and the generic "too many connections / messages" and
// "throttled" texts. Greylisting ("try again later" alone) is not one.
// code 0 is a failure before any transaction (the greeting or EHLO), whose
// text message carries.
func IsRateLimited(code int, enhanced, message string) bool {
	if code >= 500 || strings.HasPrefix(enhanced, "5.") {
		return false
	}
	msg := strings.ToLower(message)
	if containsAny(msg, "too many recipients") {
		return false
	}
	return containsAny(msg, "rate limit", "ratelimit", "rate-limit", "rate limited", "unusual rate", "too many connections",
		"too many messages", "too many concurrent", "too much mail", "throttl", "server busy", "tss04", "ts04",
		"unexpected volume", "sending rate", "4.7.28", "4.7.500", "4.7.650", "exceeded the rate", "slow down")
}
