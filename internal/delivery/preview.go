package delivery

import (
	"context"
	"errors"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
)

// Preview builds and signs o exactly as its first attempt would (the same
// build, tracking links, DKIM key and Feedback-ID), for a dry run: no job,
// nothing read back or stored. A topic send whose recipients each get
// their own message is shown as its first recipient's. A message that
// cannot be built or signed answers 422 message_unbuildable.
func (s *Service) Preview(ctx context.Context, o *sending.Outgoing, now time.Time) ([]byte, error) {
	e, err := decodeEmail(o)
	if err == nil {
		err = e.resolveRecipients(ctx, s.db) // never compacted: nothing read
	}
	if err != nil {
		return nil, err
	}
	var raw []byte
	if env := e.envelope(); s.personal(e) && len(env) > 0 {
		raw, err = s.messageFor(ctx, e, env[0], now)
	} else {
		raw, err = s.message(ctx, e, now, false)
	}
	var perm permanentError
	if errors.As(err, &perm) {
		return nil, apierr.Invalid422("message_unbuildable", "The message cannot be built for delivery: %s.", perm.Error())
	}
	return raw, err
}

var _ sending.Previewer = (*Service)(nil)
