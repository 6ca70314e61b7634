// Package requestlog keeps the request log (issue #41): one row per
// authenticated /v1 call — method, path (query secrets redacted), status,
// the key's id, user agent, duration and time — listable by the workspace
// (GET /v1/logs, the dashboard's Logs page) and purged by retention. No
// body is stored, only its size and type and the answer's error code, so
// the log never holds an API key, a secret, message content or an
// attachment. Rows are written off the request path by Writer, in batches.
package requestlog

import (
	"net/url"
	"strings"
	"time"
)

// Entry is one API call as the log keeps it.
type Entry struct {
	ID            string // minted by the writer from At
	WorkspaceID   string
	APIKeyID      string
	Method        string
	Path          string // with the query, secrets redacted (Redact)
	Status        int
	ErrorCode     string // the answer's error code; "" on success
	UserAgent     string // "" when the client sent none
	RequestID     string
	Duration      time.Duration
	RequestBytes  int64
	ResponseBytes int64
	ContentType   string // the request body's
	At            time.Time
}

// Limits on what one row keeps of what the client chose.
const (
	maxPath      = 1024
	maxUserAgent = 256
	maxType      = 100
)

// idPrefix starts every row's id.
const idPrefix = "log"

// Redacted replaces the value of a query parameter that may carry a secret.
const Redacted = "REDACTED"

// secretWords are the words of a parameter name (split at _ and -) that
// make its value a secret; over-redacting a harmless one costs nothing.
var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true, "passwd": true,
	"signature": true, "sig": true, "auth": true, "authorization": true, "credential": true,
	"credentials": true, "session": true, "otp": true, "code": true,
}

// Redact is path with its query as sent, but for the values of parameters
// whose name says secret (key, token, signature, ...), and cut to maxPath.
func Redact(path, rawQuery string) string {
	if rawQuery == "" {
		return clip(path, maxPath)
	}
	var b strings.Builder
	b.WriteString(path)
	b.WriteByte('?')
	for i, part := range strings.Split(rawQuery, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		name, _, hasValue := strings.Cut(part, "=")
		if hasValue && isSecret(name) {
			b.WriteString(name + "=" + Redacted)
			continue
		}
		b.WriteString(part)
	}
	return clip(b.String(), maxPath)
}

func isSecret(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == '[' || r == ']' }) {
		if secretWords[w] {
			return true
		}
	}
	return false
}

// clip cuts s to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
