package broadcasts

import (
	"context"
	"sync"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/render"
	"mailroom/internal/sending"
)

// Body renders a recipient's message (source is its broadcast_recipients
// id) as the fan-out rendered it when it handed the email over at at: the
// broadcast's content, pinned template version and fallbacks, the
// recipient's merge data as snapshotted, links made as of at. Delivery
// calls it to build the message and the sending area to answer a read, so
// the body is stored once per broadcast, not once per recipient.
func (s *Service) Body(ctx context.Context, workspaceID, source string, at time.Time) (sending.Body, error) {
	one, err := s.Bodies(ctx, workspaceID, []string{source})
	if err != nil {
		return sending.Body{}, err
	}
	return one[source](ctx, at)
}

// Bodies reads the recipient rows of sources (one workspace's emails, a
// delivery batch) in one query and returns what renders each body as Body
// does; a source without a row gets one that answers not found.
func (s *Service) Bodies(ctx context.Context, workspaceID string, sources []string) (map[string]sending.RenderBody, error) {
	rows, err := recipientRows(ctx, s.c.DB, workspaceID, sources)
	if err != nil {
		return nil, err
	}
	out := make(map[string]sending.RenderBody, len(sources))
	for _, src := range sources {
		out[src] = func(context.Context, time.Time) (sending.Body, error) {
			return sending.Body{}, apierr.NotFound("broadcast recipient")
		}
	}
	for _, r := range rows {
		out[r.ID] = func(ctx context.Context, at time.Time) (sending.Body, error) {
			return s.body(ctx, workspaceID, r.broadcastID, r.pendingRow, at)
		}
	}
	return out, nil
}

// body renders recipient p of the broadcast as of at.
func (s *Service) body(ctx context.Context, workspaceID, broadcastID string, p pendingRow, at time.Time) (sending.Body, error) {
	b, r, err := s.sending.get(ctx, s, workspaceID, broadcastID)
	if err != nil {
		return sending.Body{}, err
	}
	out, headers, err := s.personal(b, r, p.vars(), p.Email, at)
	if err != nil {
		return sending.Body{}, err
	}
	return sending.Body{HTML: out.HTML, Text: out.Text, Headers: headers}, nil
}

// vars are the recipient's merge fields.
func (p pendingRow) vars() map[string]any {
	return render.MemberVars(p.Email, p.First, p.Last, p.ContactID, p.Attrs, p.MemberAttrs)
}

// renderers keeps the renderer of each broadcast being delivered: a
// broadcast's content is fixed once it sends, so each node parses it (and
// reads its template version) once, not once per recipient.
type renderers struct {
	mu sync.Mutex
	m  map[string]*cachedRenderer
}

type cachedRenderer struct {
	ready chan struct{} // closed once b, r and err are set
	b     Broadcast
	r     *renderer
	err   error
}

// maxRenderers bounds the cache; past it, it starts again empty (a node
// delivers a few broadcasts at once, rarely more).
const maxRenderers = 64

func (c *renderers) get(ctx context.Context, s *Service, workspaceID, id string) (Broadcast, *renderer, error) {
	key := workspaceID + "/" + id
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxRenderers {
		c.m = map[string]*cachedRenderer{}
	}
	e, ok := c.m[key]
	if !ok {
		e = &cachedRenderer{ready: make(chan struct{})}
		c.m[key] = e
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-e.ready:
			return e.b, e.r, e.err
		case <-ctx.Done():
			return Broadcast{}, nil, ctx.Err()
		}
	}
	e.b, e.err = broadcastByID(ctx, s.c.DB, workspaceID, id)
	if e.err == nil {
		e.r, e.err = s.sendRenderer(ctx, e.b)
	}
	if e.err == nil {
		e.r.bodyOnly = true // Body's: the email has its subject
	}
	close(e.ready)
	if e.err != nil {
		// Not kept: the next recipient tries again (a database error passes).
		c.mu.Lock()
		if c.m[key] == e {
			delete(c.m, key)
		}
		c.mu.Unlock()
	}
	return e.b, e.r, e.err
}
