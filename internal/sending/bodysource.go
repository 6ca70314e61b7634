package sending

import (
	"context"
	"maps"
	"time"
)

// Body is the part of an email that is rendered when it is sent or read
// instead of stored: its html and text and the headers that name its
// recipient (List-Unsubscribe).
type Body struct {
	HTML, Text string
	Headers    map[string]string
}

// BodySource renders the body of an email stored without one. A broadcast
// stores its body once and each recipient's email only names its recipient
// row (emails.body_source): 100,000 members then cost 100,000 small rows,
// not 1.5 GB of html. source is what the area that accepted the email wrote
// there; at is the email's creation, so that every render of it (delivery,
// a retry, a read months later) is the same to the byte.
// Bodies reads the rows behind many bodies of one workspace in one query (a
// delivery batch's) and renders each later, when its message is built.
type BodySource interface {
	Body(ctx context.Context, workspaceID, source string, at time.Time) (Body, error)
	Bodies(ctx context.Context, workspaceID string, sources []string) (map[string]RenderBody, error)
}

// RenderBody renders one body as of at (the email's creation).
type RenderBody func(ctx context.Context, at time.Time) (Body, error)

// SetBodySource installs what renders the emails stored without a body
// (the broadcasts area; the app wires it).
func (s *Service) SetBodySource(b BodySource) { s.bodies = b }

// withBody renders e's body when its row stores none (body_source set and
// not yet emptied by retention).
func (s *Service) withBody(ctx context.Context, e *emailRow) error {
	if e.BodySource == "" || s.bodies == nil {
		return nil
	}
	b, err := s.bodies.Body(ctx, e.WorkspaceID, e.BodySource, e.CreatedAt)
	if err != nil {
		return err
	}
	e.HTML, e.Text = b.HTML, b.Text
	e.Headers = WithHeaders(e.Headers, b.Headers)
	return nil
}

// WithHeaders is the stored headers with a rendered body's added (the
// body's win): the one merge of both, for reads and for delivery.
func WithHeaders(stored, rendered map[string]string) map[string]string {
	if len(rendered) == 0 {
		return stored
	}
	out := make(map[string]string, len(stored)+len(rendered))
	maps.Copy(out, stored)
	maps.Copy(out, rendered)
	return out
}
