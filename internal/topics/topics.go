// Package topics holds opt-out categories ("product news", "tips"): the
// topics of a workspace, each address's preference per topic, the check a
// send with a topic makes, the List-Unsubscribe headers it carries (RFC
// 2369, RFC 8058) and the signed links of the hosted preference and
// one-click unsubscribe pages.
package topics

import (
	"regexp"
	"strings"
	"time"
	"unicode"
)

// Limits (the spec gives only the key's minimum; see docs/decisions.md).
const (
	MinKeyLen         = 2
	MaxKeyLen         = 64
	MaxNameLen        = 200
	MaxDescriptionLen = 1000
	MaxSourceLen      = 64
)

// Sources of a preference row.
const (
	SourceAPI             = "api"
	SourcePreferencePage  = "preference_page"
	SourceOneClick        = "one_click"
	SourceUnsubscribePage = "unsubscribe_page" // the page's "everything from this sender"
	SourceMailto          = "mailto"
)

// Topic is one opt-out category.
type Topic struct {
	ID           string
	WorkspaceID  string
	Key          string
	Name         string
	Description  string
	DefaultOptIn bool
	Required     bool
	ArchivedAt   *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Archived reports whether the topic is retired.
func (t Topic) Archived() bool { return t.ArchivedAt != nil }

// Preference is an address's standing on one topic: its own choice, or the
// topic's default when Source is "". A required topic is always subscribed.
type Preference struct {
	Topic      Topic
	Subscribed bool
	Source     string     // "" when the address never chose
	UpdatedAt  *time.Time // nil when the address never chose
}

// Preferences is the answer of the preferences routes.
type Preferences struct {
	Email         string
	PreferenceURL string
	Preferences   []Preference
}

var keyRE = regexp.MustCompile(`^[a-z0-9-]+$`)

// ValidKey reports whether k is a topic key: lowercase letters, digits and
// hyphens, 2 to 64 characters.
func ValidKey(k string) bool {
	return len(k) >= MinKeyLen && len(k) <= MaxKeyLen && keyRE.MatchString(k)
}

// KeyFromName derives a key: lowercase ASCII letters and digits kept, every
// other run of characters one hyphen, hyphens trimmed at the ends; a name
// that leaves fewer than 2 characters gives "topic".
func KeyFromName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	k := b.String()
	if len(k) > MaxKeyLen-4 { // room for a "-NNN" suffix
		k = strings.TrimRight(k[:MaxKeyLen-4], "-")
	}
	if len(k) < MinKeyLen {
		return "topic"
	}
	return k
}

// hasControl reports a control character (CR, LF, NUL and the rest) or a
// line or paragraph separator: names are shown on pages, never in headers,
// but none of them belongs in a name.
func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
	}) >= 0
}
