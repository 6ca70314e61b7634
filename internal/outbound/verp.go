package outbound

import "strings"

// VERPAddress returns the return path that ties a bounce to its email:
// localPrefix+emailID@domain (e.g. bounces+em_abc@mail.example.com). A
// remote server that bounces asynchronously sends the DSN to this address,
// and ParseVERP recovers the id without parsing the DSN body.
func VERPAddress(localPrefix, emailID, domain string) string {
	return localPrefix + "+" + emailID + "@" + domain
}

// ParseVERP extracts the email id from a VERP return path. The id must be
// non-empty and made of [a-z0-9_]; case is folded because some MTAs
// lowercase or uppercase local parts.
func ParseVERP(addr string) (emailID string, ok bool) {
	addr = strings.TrimSpace(addr)
	addr = strings.TrimSuffix(strings.TrimPrefix(addr, "<"), ">")
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 {
		return "", false
	}
	local := addr[:at]
	plus := strings.LastIndexByte(local, '+')
	if plus <= 0 {
		return "", false
	}
	id := strings.ToLower(local[plus+1:])
	if id == "" || len(id) > 64 {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "", false
		}
	}
	return id, true
}
