package sending

import (
	"net/mail"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Limits from RFC 5321 §4.5.3.1 (local part) and RFC 3696 errata 1690 (path).
const (
	maxLocalPart   = 64
	maxEmailLength = 254
	maxDomain      = 253
	maxLabel       = 63
	maxAddressIn   = 1024 // whole input including a display name; longer is abuse, not an address
)

// Address is one mailbox: an optional display name and an addr-spec whose
// domain is lowercased ASCII (IDN domains are held in punycode form).
type Address struct {
	Name  string
	Email string
}

// String formats the address for a message header (RFC 5322 §3.4): the name
// is quoted when it holds specials and RFC 2047-encoded when it is not ASCII
// or could be mistaken for an encoded word. Without a name it is the bare
// address.
func (a Address) String() string {
	if a.Name == "" {
		return a.Email
	}
	if a.Name != "" && looksEncoded(a.Name) && isASCII(a.Name) {
		// net/mail would write such a name bare and a reader would decode it,
		// turning the literal text into something else; force Q-encoding.
		return qEncode(a.Name) + " <" + a.Email + ">"
	}
	return (&mail.Address{Name: a.Name, Address: a.Email}).String()
}

// ParseAddress reads "a@b.c", "Name <a@b.c>" or "\"Quoted, Name\" <a@b.c>".
// It refuses what a mail server or a header would choke on: control
// characters (CR/LF above all), quoted or non-ASCII local parts, domains that
// are not host names, and addresses over the RFC length limits. The domain is
// lowercased and IDN domains are converted to punycode.
//
// The error is a plain error whose text explains the problem; callers wrap it
// in the code that fits the field (invalid_from, invalid_recipient, ...).
func ParseAddress(s string) (Address, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Address{}, addrErr("is empty")
	}
	if len(s) > maxAddressIn {
		return Address{}, addrErr("is too long")
	}
	if !utf8.ValidString(s) {
		return Address{}, addrErr("is not valid UTF-8")
	}
	if hasControl(s) {
		return Address{}, addrErr("contains a control character (such as a line break)")
	}
	if !strings.Contains(s, "@") {
		return Address{}, addrErr("has no @")
	}
	name, addr, simple := simpleAddress(s)
	if !simple {
		parsed, err := mail.ParseAddress(s)
		if err != nil {
			return Address{}, addrErr("does not parse (" + err.Error() + ")")
		}
		name, addr = parsed.Name, parsed.Address
	}
	// Encoded words in the name are decoded by net/mail and may carry what the
	// raw text could not.
	name = strings.TrimSpace(name)
	if hasControl(name) || !utf8.ValidString(name) {
		return Address{}, addrErr("has a display name with a control character")
	}
	email, err := normalizeEmail(addr, s)
	if err != nil {
		return Address{}, err
	}
	return Address{Name: name, Email: email}, nil
}

// simpleAddress reads the two common forms, "local@domain" and "Words Of
// Name <local@domain>" (the name quoted or not), where every word and both parts of the address are
// plain ASCII atoms. It answers false for anything else (quotes, comments,
// encoded words, runs of spaces, non-ASCII, ...), which net/mail reads
// instead. net/mail allocates an error for each form it tries before the
// right one: a fifth of a send's validation. Where it answers, net/mail
// agrees (FuzzSimpleAddressAgrees).
func simpleAddress(s string) (name, addr string, ok bool) {
	addr = s
	if strings.HasSuffix(s, ">") {
		lt := strings.IndexByte(s, '<')
		if lt < 0 {
			return "", "", false
		}
		name, addr = s[:lt], s[lt+1:len(s)-1]
		if name != "" {
			// Words separated by single spaces, and one space before '<'.
			words, rest := name[:len(name)-1], name[len(name)-1:]
			if len(words) >= 2 && words[0] == '"' && words[len(words)-1] == '"' {
				// Quoted as mail.Address.String writes every name (so as
				// each stored From reads), its words plain atoms inside.
				words = words[1 : len(words)-1]
			}
			if rest != " " || !isPhrase(words) {
				return "", "", false
			}
			name = words
		}
	}
	at := strings.IndexByte(addr, '@')
	if at < 0 || !isDotAtom(addr[:at]) || !isDotAtomOf(addr[at+1:], isHostChar) {
		return "", "", false
	}
	return name, addr, true
}

// SimpleAddress is simpleAddress for the delivery engine, which reads the
// addresses stored at acceptance for every message it builds: where it
// answers, net/mail would read the same name and address.
func SimpleAddress(s string) (name, addr string, ok bool) { return simpleAddress(s) }

// isPhrase: one or more words of atext without '=' and '?' (which could
// begin an encoded word net/mail would decode), separated by single spaces.
func isPhrase(s string) bool {
	for w := range strings.SplitSeq(s, " ") {
		if w == "" {
			return false
		}
		for i := 0; i < len(w); i++ {
			if c := w[i]; !isAtext(c) || c == '=' || c == '?' {
				return false
			}
		}
	}
	return true
}

func isHostChar(c byte) bool { return isAlnum(c) || c == '-' }

// normalizeEmail checks the addr-spec net/mail found. raw is the caller's
// text, used to see whether the local part was quoted (net/mail unquotes it).
func normalizeEmail(addr, raw string) (string, error) {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return "", addrErr("has no @")
	}
	local, domain := addr[:at], addr[at+1:]
	if local == "" {
		return "", addrErr("has an empty local part")
	}
	if domain == "" {
		return "", addrErr("has an empty domain")
	}
	if !isDotAtom(local) || strings.Contains(raw, "\"@") {
		return "", addrErr("has a local part that is not plain ASCII letters, digits and . ! # $ % & ' * + - / = ? ^ _ ` { | } ~")
	}
	if len(local) > maxLocalPart {
		return "", addrErr("has a local part longer than 64 characters")
	}
	host, err := normalizeDomain(domain)
	if err != nil {
		return "", err
	}
	email := local + "@" + host
	if len(email) > maxEmailLength {
		return "", addrErr("is longer than 254 characters")
	}
	return email, nil
}

// normalizeDomain lowercases, converts IDN to punycode and checks host-name
// syntax (RFC 1123 labels). A single label or an all-numeric top label is
// refused: such a domain cannot receive internet mail, and the usual cause is
// a typo ("bob@gmail") or an IP address.
func normalizeDomain(domain string) (string, error) {
	if strings.HasPrefix(domain, "[") {
		return "", addrErr("uses an IP address literal instead of a domain")
	}
	ascii, err := idna.Lookup.ToASCII(strings.ToLower(domain))
	if err != nil {
		return "", addrErr("has a domain that is not a valid host name")
	}
	ascii = strings.ToLower(ascii)
	if len(ascii) > maxDomain {
		return "", addrErr("has a domain longer than 253 characters")
	}
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return "", addrErr("has a domain without a dot")
	}
	for _, l := range labels {
		if !isHostLabel(l) {
			return "", addrErr("has a domain that is not a valid host name")
		}
	}
	if isDigits(labels[len(labels)-1]) {
		return "", addrErr("has a domain that is not a valid host name")
	}
	return ascii, nil
}

func isHostLabel(l string) bool {
	if l == "" || len(l) > maxLabel || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isDotAtom reports whether s is an RFC 5322 dot-atom of ASCII atext.
func isDotAtom(s string) bool { return isDotAtomOf(s, isAtext) }

// isDotAtomOf: characters ok allows, separated by single dots, with no
// leading or trailing dot.
func isDotAtomOf(s string, ok func(byte) bool) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '.' && !ok(c) {
			return false
		}
	}
	return true
}

func isAtext(c byte) bool { return isAlnum(c) || strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0 }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// hasControl reports C0 controls, DEL, the C1 range and invalid UTF-8; all are refused in
// anything that ends up in a header.
func hasControl(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r == utf8.RuneError && size == 1) {
			return true
		}
		i += size
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func looksEncoded(s string) bool { return strings.Contains(s, "=?") }

// qEncode writes ASCII s as RFC 2047 Q encoded words, every byte but letters
// and digits escaped. mime.QEncoding cannot be used: it leaves printable
// ASCII alone, which is exactly the text that needs hiding here.
func qEncode(s string) string {
	const perWord = 21 // 10 prefix + 21*3 + 2 suffix stays within 75 (RFC 2047 §2)
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for start := 0; start < len(s); start += perWord {
		end := min(start+perWord, len(s))
		if start > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("=?utf-8?q?")
		for i := start; i < end; i++ {
			c := s[i]
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
				b.WriteByte(c)
				continue
			}
			b.WriteByte('=')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
		b.WriteString("?=")
	}
	return b.String()
}

type addressError string

func (e addressError) Error() string { return string(e) }

func addrErr(why string) error { return addressError(why) }
