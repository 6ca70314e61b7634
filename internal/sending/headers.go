package sending

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"mailroom/internal/apierr"
)

// Header limits. RFC 5322 §2.1.1 caps a line at 998 octets; a value longer
// than that cannot be written without folding tricks no client expects.
const (
	MaxHeaders        = 50
	MaxHeaderName     = 100
	MaxHeaderValueLen = 998
)

// reservedHeaders are written by the service (or, for Return-Path, by the
// receiving server) and may not be supplied. Beyond the spec's list this
// adds Return-Path and the MIME structure headers: a second copy of any of
// them corrupts the message rather than customising it. Sender stays allowed.
func isReservedHeader(name string) bool {
	switch strings.ToLower(name) {
	case "message-id", "date", "from", "to", "cc", "bcc", "reply-to", "subject",
		"dkim-signature", "return-path", "mime-version", "content-type", "content-transfer-encoding":
		return true
	}
	return false
}

// ValidateHeaders checks the caller's extra headers. Names are RFC 5322 field
// names (printable ASCII 33-126 except ':') else 400 invalid_header_name;
// service-written names answer 400 reserved_header; a value carrying CR, LF,
// NUL or another control character (header injection) or longer than 998
// bytes answers 400 invalid_request. Names are checked in sorted order so the
// same body always gets the same error.
func ValidateHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return apierr.InvalidRequest("headers has %d entries; at most %d are allowed.", len(h), MaxHeaders)
	}
	names := slices.Sorted(maps.Keys(h))
	for _, name := range names {
		if !isFieldName(name) {
			return apierr.BadRequest("invalid_header_name",
				"headers: %q is not a valid header name; use printable ASCII without spaces or ':' (e.g. X-Campaign).", clip(name))
		}
		if isReservedHeader(name) {
			return apierr.BadRequest("reserved_header",
				"headers: %s is written by the service and cannot be set; use the matching send field instead.", name)
		}
		v := h[name]
		if strings.ContainsAny(v, "\r\n\x00") {
			return apierr.InvalidRequest("headers.%s: the value contains a line break or NUL, which is not allowed in a header.", name)
		}
		if !utf8.ValidString(v) || hasControlExceptTab(v) {
			return apierr.InvalidRequest("headers.%s: the value contains a control character or invalid UTF-8.", name)
		}
		if len(v) > MaxHeaderValueLen {
			return apierr.InvalidRequest("headers.%s: the value is %d bytes; at most %d are allowed.", name, len(v), MaxHeaderValueLen)
		}
	}
	return nil
}

// isFieldName reports whether s is an RFC 5322 §3.6.8 field-name.
func isFieldName(s string) bool {
	if s == "" || len(s) > MaxHeaderName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 33 || c > 126 || c == ':' {
			return false
		}
	}
	return true
}

func hasControlExceptTab(s string) bool {
	return hasControl(strings.ReplaceAll(s, "\t", " "))
}
