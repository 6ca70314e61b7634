package render

import (
	"fmt"
	"strings"
)

// The merge tags people bring from other services, written as Mailroom's
// own before a template is parsed (CONTRACT-WAVE3, docs/merge-tags.md):
// Mailchimp's *|NAME|* and Resend's {{{RESEND_UNSUBSCRIBE_URL}}}.
var mailchimpTags = map[string]string{
	"UNSUB": "unsubscribe_url", "UPDATE_PROFILE": "preferences_url",
	"FNAME": "first_name", "LNAME": "last_name", "EMAIL": "email",
}

// Names the personal links go by in a template.
const (
	UnsubscribeURL = "unsubscribe_url"
	PreferencesURL = "preferences_url"
)

// translateTags rewrites *|NAME|* as {{ name }} (the five Mailchimp names
// above by their Mailroom names, any other lowercased: merge fields are
// also reachable by their lowercase names) and RESEND_UNSUBSCRIBE_URL as
// unsubscribe_url. An unterminated *| or a conditional (*|IF:…|*) is an
// error naming the line. It is linear in the source.
func translateTags(src string) (string, error) {
	src = strings.ReplaceAll(src, "RESEND_UNSUBSCRIBE_URL", UnsubscribeURL)
	if !strings.Contains(src, "*|") {
		return src, nil
	}
	var b strings.Builder
	b.Grow(len(src))
	rest := src
	for {
		i := strings.Index(rest, "*|")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		line := 1 + strings.Count(src[:len(src)-len(rest)+i], "\n")
		tail := rest[i+2:]
		j := strings.Index(tail, "|*")
		if j < 0 || strings.ContainsAny(tail[:j], "\n*|{}") {
			return "", fmt.Errorf("the merge tag *|%s at line %d is not closed with |*", clipTag(tail), line)
		}
		name := strings.TrimSpace(tail[:j])
		if name == "" || !validTagName(name) {
			if strings.Contains(name, ":") {
				return "", fmt.Errorf("the merge tag *|%s|* at line %d is a Mailchimp conditional or function, which Mailroom does not run; write {{#field}}…{{/field}} instead", clipTag(name), line)
			}
			return "", fmt.Errorf("*|%s|* at line %d is not a merge tag: a name is letters, digits and _", clipTag(name), line)
		}
		to, ok := mailchimpTags[strings.ToUpper(name)]
		if !ok {
			to = strings.ToLower(name)
		}
		b.WriteString("{{ " + to + " }}")
		rest = tail[j+2:]
	}
}

func validTagName(s string) bool {
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return len(s) <= 64
}

func clipTag(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}
