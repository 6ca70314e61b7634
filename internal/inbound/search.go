package inbound

import (
	"context"
	"html"
	"strings"
	"time"
	"unicode/utf8"

	"mailroom/internal/apierr"
)

// maxSearchBody is how much of a body is searchable: PostgreSQL refuses a
// tsvector past 1 MB, and the start of a message is what people look for.
const maxSearchBody = 100_000

// Hit is one GET /v1/search result.
type Hit struct {
	MessageID  string
	ThreadID   string
	Mailbox    string
	Direction  string
	From       string
	FromName   string
	Subject    string
	Excerpt    string
	Score      float64
	Unread     bool
	Archived   bool
	ReceivedAt time.Time
}

// Search finds the messages holding every word of q (subject, names and
// addresses, attachment names, the body), best ranked first, in every
// mailbox the reader may read, archived ones included.
func (s *Service) Search(ctx context.Context, rd Reader, q string, limit int) ([]Hit, error) {
	if strings.TrimSpace(q) == "" {
		return nil, apierr.InvalidRequest("q is required.")
	}
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	return searchMessages(ctx, s.db, rd.WorkspaceID, mbx, q, limit)
}

// searchBody is the searchable text of a message: its text body, or its
// html body as text when it has none, cut at maxSearchBody.
func searchBody(m *Message) string {
	var b string
	switch {
	case m.Text != nil && strings.TrimSpace(*m.Text) != "":
		b = *m.Text
	case m.HTML != nil:
		b = html.UnescapeString(tagRE.ReplaceAllString(*m.HTML, " "))
		b = strings.Join(strings.Fields(b), " ")
	}
	if len(b) > maxSearchBody {
		cut := maxSearchBody
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b = b[:cut]
	}
	return b
}

// storedSearchBody is the search_body column: "" when it would repeat
// text_body, which the index and the excerpts read then (migration 00103).
func storedSearchBody(m *Message) string {
	b := searchBody(m)
	if m.Text != nil && b == *m.Text {
		return ""
	}
	return b
}

// searchPeople is the searchable names and addresses of a message (sender,
// recipients, whose names only the decoded To and Cc headers keep) and its
// attachment names.
func searchPeople(m *Message) string {
	parts := []string{m.FromName, m.From, m.FromAddr, m.MailFrom, m.Headers["to"], m.Headers["cc"]}
	parts = append(parts, m.To...)
	parts = append(parts, m.Cc...)
	for _, p := range m.Parts {
		parts = append(parts, p.Filename)
	}
	return strings.Join(parts, " ")
}
