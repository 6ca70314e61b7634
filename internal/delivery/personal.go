package delivery

import (
	"context"
	"html"
	"maps"
	"strings"
	"time"

	"mailroom/internal/outbound"
	"mailroom/internal/sending"
)

// OptOut gives one recipient's own unsubscribe links for a topic send (the
// topics area's signed tokens, topics.Service.Links; the app wires it).
type OptOut func(workspaceID, topicID, email string) PersonalLinks

// PersonalLinks are one recipient's links: the List-Unsubscribe value and
// the two URLs that the body's marks (sending.UnsubscribeURLMark,
// sending.PreferencesURLMark) stand for.
type PersonalLinks struct {
	ListUnsubscribe, Unsubscribe, Preferences string
}

// personal reports whether the email carries links that name a recipient
// (a topic send with unsubscribe headers): each recipient then gets a
// message of its own, so that no one's one-click link reaches another.
func (s *Service) personal(e *email) bool {
	if s.optOut == nil || e.TopicID == "" {
		return false
	}
	if _, ok := e.Headers["List-Unsubscribe"]; !ok {
		return false
	}
	// One recipient whose body holds no marks already carries its own
	// links, made when it was accepted (an automation's send).
	return len(e.To)+len(e.Cc)+len(e.Bcc) > 1 || strings.Contains(e.HTML, sending.UnsubscribeURLMark) || strings.Contains(e.HTML, sending.PreferencesURLMark) ||
		strings.Contains(e.Text, sending.UnsubscribeURLMark) || strings.Contains(e.Text, sending.PreferencesURLMark)
}

// messageFor builds and signs rcpt's own message of a topic send: its
// List-Unsubscribe, and its links in place of the body's marks. It is
// built afresh on every attempt (nothing is kept for a retry).
func (s *Service) messageFor(ctx context.Context, e *email, rcpt string, now time.Time) ([]byte, error) {
	l := s.optOut(e.WorkspaceID, e.TopicID, strings.ToLower(rcpt))
	pe := *e
	pe.Headers = maps.Clone(e.Headers)
	pe.Headers["List-Unsubscribe"] = l.ListUnsubscribe
	pe.HTML = strings.NewReplacer(sending.UnsubscribeURLMark, html.EscapeString(l.Unsubscribe),
		sending.PreferencesURLMark, html.EscapeString(l.Preferences)).Replace(e.HTML)
	pe.Text = strings.NewReplacer(sending.UnsubscribeURLMark, l.Unsubscribe, sending.PreferencesURLMark, l.Preferences).Replace(e.Text)
	return s.message(ctx, &pe, now, false)
}

// sendEach sends each recipient of env its own message, one transaction
// each, and answers every recipient's result; a recipient whose
// transaction failed before any server answered for it has its error in
// failed. A message that cannot be built fails the email (permanentError);
// a cancelled context stops the round (the queue runs the job again).
func (s *Service) sendEach(ctx context.Context, e *email, env outbound.Envelope, now time.Time, l lane) (map[string]outbound.RcptResult, map[string]error, error) {
	results := map[string]outbound.RcptResult{}
	failed := map[string]error{}
	for _, rcpt := range env.To {
		l.builds <- struct{}{}
		raw, err := s.messageFor(ctx, e, rcpt, now)
		<-l.builds
		if err != nil {
			return nil, nil, err
		}
		one := env
		one.To = []string{rcpt}
		res, err := s.transport.Send(ctx, one, raw)
		s.bufs.Put(raw)
		if err != nil && ctx.Err() != nil {
			return nil, nil, err
		}
		if res != nil {
			for _, rr := range res.Rcpts {
				results[rr.Rcpt] = rr
			}
		}
		if _, ok := results[rcpt]; !ok {
			failed[rcpt] = err
		}
	}
	return results, failed, nil
}
