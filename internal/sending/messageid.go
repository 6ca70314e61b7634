package sending

import (
	"strings"

	"mailroom/internal/outbound"
)

// derivedMessageID is the Message-ID Mailroom gives an email of id sent
// from from (as stored: "Name <address>" or the bare address):
// outbound.MessageIDFor with the From's domain, as accepting writes it.
func derivedMessageID(id, from string) string {
	addr := from
	if a, err := ParseAddress(from); err == nil {
		addr = a.Email
	}
	return outbound.MessageIDFor(id, domainOf(addr))
}

// storedMessageID is what emails.message_id keeps of an email's Message-ID:
// "" when it is the one derived from the row's id and From (every email but
// a submission that kept its client's own), which readMessageID rebuilds.
// 52 bytes less per email, and the column is not written again when the
// email goes out (issue #47).
func storedMessageID(id, from, messageID string) string {
	if messageID == derivedMessageID(id, from) {
		return ""
	}
	return messageID
}

// readMessageID is an email's Message-ID from its stored column.
func readMessageID(id, from, stored string) string {
	if stored == "" {
		return derivedMessageID(id, from)
	}
	return stored
}

// maxMessageID bounds a client's Message-ID (RFC 5322 sets no limit; this
// keeps the header on one line).
const maxMessageID = 250

// validMessageID reports whether s is an RFC 5322 §3.6.4 msg-id:
// "<" dot-atom-text "@" (dot-atom-text / "[" dtext "]") ">", no spaces,
// no comments, no obsolete forms.
func validMessageID(s string) bool {
	if len(s) < 5 || len(s) > maxMessageID || s[0] != '<' || s[len(s)-1] != '>' {
		return false
	}
	left, right, ok := strings.Cut(s[1:len(s)-1], "@")
	if !ok || !dotAtom(left) {
		return false
	}
	if strings.HasPrefix(right, "[") && strings.HasSuffix(right, "]") && len(right) > 2 {
		for i := 1; i < len(right)-1; i++ {
			if c := right[i]; c < 33 || c > 126 || c == '[' || c == ']' || c == '\\' {
				return false
			}
		}
		return true
	}
	return dotAtom(right)
}

// dotAtom is RFC 5322 §3.2.3 dot-atom-text: atext runs joined by single dots.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
