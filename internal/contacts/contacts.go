// Package contacts holds the marketing side's people and lists: contacts
// (workspace-level people with tags and attributes), audiences, their
// memberships, the bulk import and the durable automation events a change
// queues (tag.added, tag.removed, contact.created, member.subscribed). It owns the contacts, audiences, memberships, automation_events and
// contact_properties (declared attributes with a fallback) tables.
package contacts

import (
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
)

// Contact is one person of a workspace.
type Contact struct {
	ID          string
	WorkspaceID string
	Email       string // normalized: trimmed, lowercased, IDN domain in punycode
	FirstName   string
	LastName    string
	Attributes  map[string]string
	Tags        []string // lowercased, sorted
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Limits of the spec and of this service (docs/decisions.md).
const (
	MaxTagLen        = 64
	MaxAttrsPerCall  = 100
	MaxAttrNameLen   = 100
	MaxAttrValueLen  = 8192
	MaxNameLen       = 256
	MaxTagsPerChange = 100
)

// Automation event kinds: queued in the transaction of the change, one per
// real change (a repeat that changes nothing queues none).
const (
	EventTagAdded         = "tag.added"
	EventTagRemoved       = "tag.removed"
	EventContactCreated   = "contact.created"
	EventMemberSubscribed = "member.subscribed"
)

// NormalizeEmail parses an address (a bare addr-spec or "Name <addr>") and
// returns its stored form; the error says what is wrong, for the caller to
// name the field.
func NormalizeEmail(s string) (string, error) {
	a, err := sending.ParseAddress(s)
	if err != nil {
		return "", err
	}
	return strings.ToLower(a.Email), nil
}

// MaxSearchTerm bounds ?q=, in characters: longer than an address and
// both names together, it could match nothing.
const MaxSearchTerm = 256

// CheckSearchTerm refuses a ?q= term no contact could hold: invalid UTF-8,
// a NUL (PostgreSQL refuses both in text) or over MaxSearchTerm characters.
func CheckSearchTerm(q string) error {
	switch {
	case !utf8.ValidString(q) || strings.ContainsRune(q, 0):
		return apierr.InvalidRequest("q is not valid UTF-8 text (or holds a NUL character).")
	case utf8.RuneCountInString(q) > MaxSearchTerm:
		return apierr.InvalidRequest("q is longer than %d characters.", MaxSearchTerm)
	}
	return nil
}

// NormalizeTag checks a tag against the spec (1 to 64 characters, no comma
// or newline) and returns it lowercased.
func NormalizeTag(t string) (string, error) {
	t = strings.TrimSpace(t)
	switch {
	case t == "":
		return "", apierr.InvalidRequest("A tag must have 1 to %d characters; this one is empty.", MaxTagLen)
	case utf8.RuneCountInString(t) > MaxTagLen:
		return "", apierr.InvalidRequest("Tag %q is longer than %d characters.", apierr.Clip(t, 20), MaxTagLen)
	case strings.ContainsAny(t, ",\r\n"):
		return "", apierr.InvalidRequest("Tag %q contains a comma or a line break, which tags cannot hold.", t).
			WithNext("Send each tag as its own array element.")
	case !utf8.ValidString(t):
		return "", apierr.InvalidRequest("A tag is not valid UTF-8.")
	}
	return strings.ToLower(t), nil
}

// NormalizeTags normalizes a list and drops repeats (compared without case).
func NormalizeTags(in []string) ([]string, error) {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, t := range in {
		n, err := NormalizeTag(t)
		if err != nil {
			return nil, err
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, nil
}

// CheckAttrName refuses empty, overlong or control-character names.
func CheckAttrName(name string) error {
	switch {
	case name == "":
		return apierr.InvalidRequest("An attribute name is empty; names have 1 to %d characters.", MaxAttrNameLen)
	case utf8.RuneCountInString(name) > MaxAttrNameLen:
		return apierr.InvalidRequest("Attribute name %q is longer than %d characters.", apierr.Clip(name, 20), MaxAttrNameLen)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return apierr.InvalidRequest("Attribute name %q contains a control character or invalid UTF-8.", apierr.Clip(name, 40))
	}
	return nil
}

// CheckAttrValue refuses overlong values.
func CheckAttrValue(name, v string) error {
	if len(v) > MaxAttrValueLen {
		return apierr.InvalidRequest("Attribute %q is longer than %d bytes.", name, MaxAttrValueLen)
	}
	return nil
}

// MergePatch applies patch to attrs (nil value clears a name) and returns
// the result and the sorted names whose value actually changed.
func MergePatch(attrs map[string]string, patch map[string]*string) (map[string]string, []string) {
	out := make(map[string]string, len(attrs)+len(patch))
	for k, v := range attrs {
		out[k] = v
	}
	changed := []string{}
	for k, v := range patch {
		old, had := out[k]
		if v == nil {
			if had {
				delete(out, k)
				changed = append(changed, k)
			}
			continue
		}
		if !had || old != *v {
			out[k] = *v
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	return out, changed
}

// checkPatch validates a merge patch of attributes.
func checkPatch(patch map[string]*string, min int) error {
	if len(patch) < min || len(patch) > MaxAttrsPerCall {
		return apierr.InvalidRequest("Send %d to %d attribute names per call; this one has %d.", min, MaxAttrsPerCall, len(patch))
	}
	for k, v := range patch {
		if err := CheckAttrName(k); err != nil {
			return err
		}
		if v != nil {
			if err := CheckAttrValue(k, *v); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkName(field, v string) error {
	if utf8.RuneCountInString(v) > MaxNameLen {
		return apierr.InvalidRequest("%s is longer than %d characters.", field, MaxNameLen)
	}
	if strings.ContainsAny(v, "\r\n") {
		return apierr.InvalidRequest("%s contains a line break.", field)
	}
	return nil
}
