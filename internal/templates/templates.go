// Package templates holds versioned email templates: a template names its
// content, each version is immutable content (subject, html, text,
// declared variables), and published_version_id points live sends at one
// version. Rendering is internal/render's; this package picks the version,
// applies the declared variables' defaults and requirements, and answers
// apierr errors with the spec's codes.
package templates

import (
	"regexp"
	"strings"
	"time"
)

// Variable is a declared variable: { name, default?, required? }. A
// variable declared as a bare string is required with no default.
type Variable struct {
	Name     string
	Default  *string
	Required bool
}

// Version is one immutable version of a template.
type Version struct {
	ID         string
	TemplateID string
	Version    int
	Subject    string
	HTML       string
	Text       string
	Variables  []Variable
	CreatedAt  time.Time
}

// Template is a template as the API shows it; Versions is filled only by
// reads that ask for them.
type Template struct {
	ID                 string
	WorkspaceID        string
	Name               string
	Slug               string
	Description        string
	PublishedVersionID string // "" when nothing is published
	LatestVersion      int
	CreatedAt          time.Time
	UpdatedAt          time.Time
	Versions           []Version
}

// Sendable says whether a send can use the template: it has a published
// version.
func (t Template) Sendable() bool { return t.PublishedVersionID != "" }

// Limits on what a caller may store.
const (
	MaxNameLen      = 200
	MaxSlugLen      = 100
	MaxDescription  = 2000
	MaxVariables    = 100
	MaxVariableName = 100
	MaxVersions     = 1000
)

var slugRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

// Slugify derives a slug from a name: lowercase ASCII letters and digits,
// every other run of characters one hyphen; "template" when nothing is left.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= MaxSlugLen-8 {
				break
			}
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "template"
	}
	return b.String()
}
