package sending

import (
	"context"
	"maps"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/store"
)

// MaxTopicRef bounds a send's topic field (a key is at most 64 characters,
// an id shorter still).
const MaxTopicRef = 100

// Until delivery, a topic send's body holds these marks where a template
// says {{ unsubscribe_url }} and {{ preferences_url }}: the delivery engine
// gives each recipient its own message with its own links in their place
// (docs/decisions.md, "Topic sends to several recipients").
const (
	UnsubscribeURLMark = "{{unsubscribe_url}}"
	PreferencesURLMark = "{{preferences_url}}"
)

// unsubscribeHeaders are written by the service on a send with a topic;
// such a send may not carry its own.
var unsubscribeHeaders = []string{"list-unsubscribe", "list-unsubscribe-post"}

// validateTopic checks the form of the topic field (a key or an id: no
// blank, no control character, so nothing from it can reach a header) and
// that a send with a topic leaves the unsubscribe headers to the service.
func validateTopic(r *Request, v *Validated) error {
	if r.Topic == nil {
		return nil
	}
	t := *r.Topic
	if strings.TrimSpace(t) == "" || len(t) > MaxTopicRef || hasControl(t) || strings.ContainsAny(t, " \t") {
		return apierr.InvalidRequest("topic must be a topic key or id (1 to %d characters, no spaces or line breaks).", MaxTopicRef)
	}
	for name := range r.Headers {
		for _, u := range unsubscribeHeaders {
			if strings.EqualFold(name, u) {
				return apierr.BadRequest("reserved_header", "headers: %s is written by the service on a send with a topic.", name)
			}
		}
	}
	v.Topic = t
	return nil
}

// Topics is what sending needs from the topics area: the check of a send's
// topic (key or id) for its recipients, answering the topic's id and the
// headers the message carries, or apierr errors (topic_not_found,
// topic_opt_out); and the same check again, in the promoting transaction,
// for a scheduled send when it is due.
type Topics interface {
	ForSend(ctx context.Context, workspaceID, ref string, recipients []string) (topicID string, headers map[string]string, err error)
	CheckDue(ctx context.Context, q store.Querier, workspaceID, topicID string, recipients []string) error
}

// withTopic checks the send's topic and adds its unsubscribe headers. Like
// the template, it runs after the idempotency fingerprint, which covers the
// topic as sent. The stored header names the first recipient; delivery
// writes each recipient's own in its message.
func (s *Service) withTopic(ctx context.Context, workspaceID string, v *Validated) error {
	if s.topics == nil {
		return apierr.New(apierr.StatusNotFound, "topic_not_found", "No topic %q on this workspace.", clip(v.Topic))
	}
	rs := v.Recipients()
	emails := make([]string, len(rs))
	for i, r := range rs {
		emails[i] = r.Email
	}
	id, headers, err := s.topics.ForSend(ctx, workspaceID, v.Topic, emails)
	if err != nil {
		return err
	}
	v.TopicID = id
	if len(headers) > 0 {
		h := make(map[string]string, len(v.Headers)+len(headers))
		maps.Copy(h, v.Headers)
		maps.Copy(h, headers)
		v.Headers = h
	}
	return nil
}

// topicDue checks a due scheduled send's topic again: a recipient who
// switched it off since the booking, or an archived topic, fails the email
// as a suppressed recipient does (status failed, last_error naming the
// code, email.bounced with bounce_subtype topic_opt_out or topic_archived)
// and nothing is sent (docs/decisions.md, "Topic on a send"). Test sends
// are checked as at acceptance.
func (s *Service) topicDue(ctx context.Context, tx *store.Tx, ws string, e *emailRow, now time.Time) (refused bool, err error) {
	if e.TopicID == "" || s.topics == nil {
		return false, nil
	}
	err = s.topics.CheckDue(ctx, tx, ws, e.TopicID, e.Recipients)
	ae, ok := apierr.As(err)
	if err == nil || !ok {
		return false, err
	}
	subtype := "topic_opt_out"
	if ae.Code == "topic_not_found" {
		subtype = "topic_archived"
	}
	failed, err := s.failDue(ctx, tx, ws, e, subtype+": "+ae.Message, now)
	if err != nil || !failed {
		return true, err
	}
	d := e.eventData()
	d["bounce_type"] = "hard"
	d["bounce_subtype"] = subtype
	d["diagnostic"] = ae.Message
	_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: ws, EmailID: e.ID, Type: events.EmailBounced, CreatedAt: now, Data: d})
	return true, err
}
