package outbound

import (
	"crypto/hmac"
	"encoding/base32"
	"strings"
)

// VERPPrefix is the local part before the "+" of every return path.
const VERPPrefix = "bounces"

// verpTagLen is the tag's length in base32 characters: 50 bits, beyond
// guessing one RCPT at a time, and a local part of 48 characters with
// an email id (RFC 5321 allows 64).
const verpTagLen = 10

// verpTag encodes a MAC in lowercase base32 (letters and 2–7), which
// survives MTAs that fold the case of a local part.
var verpTag = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// VERP makes and reads the signed return paths that tie a bounce to its
// email: bounces+<email id>-<tag>@<domain>, where tag is the start of a
// MAC of the id under a key only Mailroom holds. A report sent to a
// return path is believed only when the tag verifies, so nobody who
// merely knows an email id (it is in every Message-ID) can bounce it.
type VERP struct {
	mac func(data []byte) []byte
}

// NewVERP returns the VERP whose tags are made by mac, HMAC-SHA256 under
// a key of its own (secretbox's MAC with purpose "verp").
func NewVERP(mac func(data []byte) []byte) *VERP { return &VERP{mac: mac} }

func (v *VERP) tag(id string) string {
	return verpTag.EncodeToString(v.mac([]byte(id))[:7])[:verpTagLen]
}

// Address returns the return path of the email: bounces+<id>-<tag>@domain
// (e.g. bounces+em_abc-k3jx2mq7ab@send.example.com).
func (v *VERP) Address(emailID, domain string) string {
	id := strings.ToLower(emailID)
	return VERPPrefix + "+" + id + "-" + v.tag(id) + "@" + domain
}

// Parse returns the email id of a return path Address made. signed is
// false for anything else: not of the form, an unsigned
// bounces+<id>@ (the form before tags), or a tag that does not verify.
// Case is folded because some MTAs lowercase or uppercase local parts.
func (v *VERP) Parse(addr string) (emailID string, signed bool) {
	id, tag, ok := splitVERP(addr)
	if !ok || v == nil || len(tag) != verpTagLen {
		return "", false
	}
	if !hmac.Equal([]byte(v.tag(id)), []byte(tag)) {
		return "", false
	}
	return id, true
}

// IsVERP reports whether addr has the form of a return path
// (bounces+…@), signed or not: such an address is Mailroom's to refuse.
func IsVERP(addr string) bool {
	addr = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(addr), "<"), ">")
	return len(addr) > len(VERPPrefix) && strings.EqualFold(addr[:len(VERPPrefix)+1], VERPPrefix+"+") && strings.LastIndexByte(addr, '@') > 0
}

// splitVERP takes bounces+<id>-<tag>@domain apart, folding case. The id
// must be non-empty, at most 64 characters of [a-z0-9_].
func splitVERP(addr string) (id, tag string, ok bool) {
	addr = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(addr), "<"), ">")
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 {
		return "", "", false
	}
	local := strings.ToLower(addr[:at])
	rest, found := strings.CutPrefix(local, VERPPrefix+"+")
	if !found {
		return "", "", false
	}
	id, tag, found = strings.Cut(rest, "-")
	if !found || id == "" || len(id) > 64 {
		return "", "", false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "", "", false
		}
	}
	return id, tag, true
}

// UnverifiedVERPID reads the email id of a return path without checking
// its tag: for logs and tests that look at Mailroom's own outgoing mail,
// never a reason to believe a report (that is Parse).
func UnverifiedVERPID(addr string) (emailID string, ok bool) {
	id, _, ok := splitVERP(addr)
	return id, ok
}
