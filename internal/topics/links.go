package topics

import (
	"bytes"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
)

// Links in mail are stateless: secretbox tokens whose payload names the
// workspace, the topic ("" on a preference link) and the address, with an
// expiry, signed under MAILROOM_SECRET_KEY. Nothing is stored per link, and
// an id alone opens nothing.
const (
	purposePreferences = "topic-preferences"
	purposeUnsubscribe = "list-unsubscribe"

	// LinkTTL is how long a link in mail works: a year, since people
	// unsubscribe from old mail too.
	LinkTTL = 365 * 24 * time.Hour

	// PreferencesPath and UnsubscribePath are where the hosted pages live
	// under MAILROOM_PUBLIC_URL; the token follows.
	PreferencesPath = "/preferences/"
	UnsubscribePath = "/unsubscribe/"

	// MaxTokenLen bounds what is even looked at (an address is at most 254
	// bytes; a token for it is well under 1 KB).
	MaxTokenLen = 2048

	// MailtoSubjectPrefix starts the subject of a mailto unsubscribe.
	MailtoSubjectPrefix = "unsubscribe "

	linkVersion = "l1"
)

// Link is what a token carries.
type Link struct {
	WorkspaceID string
	TopicID     string // "" on a preference link: every topic
	Email       string
	Expires     time.Time
}

// encode lays the fields out on lines: none of them can hold a newline (ids
// are generated, the address was parsed), and the address comes last.
func (l Link) encode() []byte {
	return []byte(linkVersion + "\n" + l.WorkspaceID + "\n" + l.TopicID + "\n" + strconv.FormatInt(l.Expires.Unix(), 10) + "\n" + l.Email)
}

var errMalformed = errors.New("topics: malformed link payload")

// ParseLink reads a token's payload (after its MAC was checked).
func ParseLink(p []byte) (Link, error) {
	parts := bytes.SplitN(p, []byte("\n"), 5)
	if len(parts) != 5 || string(parts[0]) != linkVersion {
		return Link{}, errMalformed
	}
	exp, err := strconv.ParseInt(string(parts[3]), 10, 64)
	if err != nil || exp <= 0 {
		return Link{}, errMalformed
	}
	l := Link{WorkspaceID: string(parts[1]), TopicID: string(parts[2]), Email: string(parts[4]), Expires: time.Unix(exp, 0)}
	if l.WorkspaceID == "" || l.Email == "" || strings.ContainsAny(l.Email, "\r\n\x00") || !strings.Contains(l.Email, "@") {
		return Link{}, errMalformed
	}
	return l, nil
}

func errBadLink() error {
	return apierr.BadRequest("invalid_link", "This link is not valid or has expired; nothing was changed.").
		WithNext("Use the link in a more recent email from the sender.")
}

func (s *Service) token(purpose string, l Link) string {
	return s.links.Box.Token(purpose, nil, l.encode())
}

// open checks a token for purpose: the MAC, the payload, the expiry.
func (s *Service) open(purpose, token string) (Link, error) {
	if s.links.Box == nil || token == "" || len(token) > MaxTokenLen {
		return Link{}, errBadLink()
	}
	p, ok := s.links.Box.OpenToken(purpose, nil, token)
	if !ok {
		return Link{}, errBadLink()
	}
	l, err := ParseLink(p)
	if err != nil || !s.clock.Now().Before(l.Expires) {
		return Link{}, errBadLink()
	}
	return l, nil
}

// PreferenceURL is the hosted preference page of an address, valid until
// expires.
func (s *Service) PreferenceURL(workspaceID, email string, expires time.Time) string {
	if s.links.Box == nil {
		return ""
	}
	return s.links.PublicURL + PreferencesPath + s.token(purposePreferences, Link{WorkspaceID: workspaceID, Email: email, Expires: expires})
}

// UnsubscribeURL is the RFC 8058 one-click link for an address and topic
// ("" = every topic), valid until expires.
func (s *Service) UnsubscribeURL(workspaceID, topicID, email string, expires time.Time) string {
	return s.links.PublicURL + UnsubscribePath + s.unsubscribeToken(workspaceID, topicID, email, expires)
}

func (s *Service) unsubscribeToken(workspaceID, topicID, email string, expires time.Time) string {
	return s.token(purposeUnsubscribe, Link{WorkspaceID: workspaceID, TopicID: topicID, Email: email, Expires: expires})
}

// UnsubscribeMailto is the mailto: form of the same unsubscribe: mail to
// the unsubscribe address whose subject carries the token (a local part
// is limited to 64 octets, too short for it).
func (s *Service) UnsubscribeMailto(workspaceID, topicID, email string, expires time.Time) string {
	return s.mailto(s.unsubscribeToken(workspaceID, topicID, email, expires))
}

func (s *Service) mailto(token string) string {
	return "mailto:" + s.links.UnsubscribeAddress + "?subject=" + url.PathEscape(MailtoSubjectPrefix+token)
}

// ListUnsubscribe is the value of the List-Unsubscribe header (RFC 2369)
// for an address and topic: the https one-click link, then the mailto.
func (s *Service) ListUnsubscribe(workspaceID, topicID, email string) string {
	return s.Links(workspaceID, topicID, email).ListUnsubscribe
}

// UnsubscribeLocalPart is the local part of the mailto unsubscribe address
// (unsubscribe@<service domain>), which the inbound SMTP server accepts.
const UnsubscribeLocalPart = "unsubscribe"

// MailLinks are one recipient's personal links for a marketing message:
// the one-click unsubscribe URL (for the topic, or every list), the
// preference page, and the List-Unsubscribe header built from the same
// token, so the link in the body and the header's are one link.
type MailLinks struct {
	Unsubscribe, Preferences, ListUnsubscribe string
}

// Links computes a recipient's MailLinks (tokens are MACs: made again for
// the same recipient in the same second, they are the same).
func (s *Service) Links(workspaceID, topicID, email string) MailLinks {
	return s.LinksAt(workspaceID, topicID, email, s.clock.Now())
}

// LinksAt is Links as made at at: a broadcast renders its recipient's
// message as of the email's creation, so each render has the same links.
func (s *Service) LinksAt(workspaceID, topicID, email string, at time.Time) MailLinks {
	exp := at.Add(LinkTTL)
	token := s.unsubscribeToken(workspaceID, topicID, email, exp) // one MAC for the link and the mailto
	unsub := s.links.PublicURL + UnsubscribePath + token
	header := "<" + unsub + ">"
	if s.links.UnsubscribeAddress != "" {
		header += ", <" + s.mailto(token) + ">"
	}
	return MailLinks{Unsubscribe: unsub, Preferences: s.PreferenceURL(workspaceID, email, exp), ListUnsubscribe: header}
}
