package contacts

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/secretbox"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// Double opt-in limits (spec "Operation limits").
const (
	MaxConfirmSends = 3
	ConfirmTTL      = 30 * 24 * time.Hour
	confirmPurpose  = "double-opt-in"
	confirmPath     = "/confirm/"
)

// Mailer is the normal sending path a confirmation goes through.
type Mailer interface {
	Send(ctx context.Context, c sending.Caller, raw []byte) (sending.Outcome, error)
}

// ConfirmConfig is what sending confirmations needs; set by the app.
type ConfirmConfig struct {
	Mailer    Mailer
	Box       *secretbox.Box // MAILROOM_SECRET_KEY: signs the stateless links
	PublicURL string         // MAILROOM_PUBLIC_URL, without a trailing slash
	// From is the workspace's sender for confirmations.
	From func(ctx context.Context, workspaceID string) (string, error)
}

// SetConfirm enables confirmation sends.
func (s *Service) SetConfirm(c ConfirmConfig) { s.confirm = c }

// Confirmation is the answer of a confirmation send.
type Confirmation struct {
	MembershipID string
	Email        string
	EmailID      string
	Status       string
	ConfirmURL   string
	Sends        int
}

// Default confirmation text, used where the audience sets none.
const (
	DefaultConfirmSubject = "Please confirm your subscription to {{ audience_name }}"
	DefaultConfirmBody    = "Hello,\n\nplease confirm that {{ email }} wants to receive {{ audience_name }}:\n\n{{ confirm_url }}\n\n" +
		"The link is valid for {{ ttl_days }} days. If you did not ask for this, ignore this message; nothing will be sent.\n"
)

// SendConfirmation sends the double opt-in email for a pending membership,
// at most MaxConfirmSends times; the fourth answers 422 confirmation_limit.
func (s *Service) SendConfirmation(ctx context.Context, workspaceID, audienceID, memberID string) (Confirmation, error) {
	if s.confirm.Mailer == nil || s.confirm.Box == nil {
		return Confirmation{}, apierr.Internal()
	}
	var m Member
	var aud Audience
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if aud, err = audienceByID(ctx, tx, workspaceID, audienceID); err != nil {
			return notFound(err, errAudienceNotFound)
		}
		if m, err = memberByID(ctx, tx, workspaceID, audienceID, memberID); err != nil {
			return notFound(err, errMemberNotFound)
		}
		if m.Status != StatusPending {
			return apierr.Invalid422("not_pending", "The membership is %s; only a pending member is sent a confirmation.", m.Status)
		}
		if m.ConfirmSends >= MaxConfirmSends {
			return apierr.Invalid422("confirmation_limit", "This membership was already sent %d confirmations, the most allowed.", MaxConfirmSends).
				WithNext("Wait for the member to use one of the links already sent.")
		}
		// Counted before the send: a send that fails still used a try, so
		// a retry loop cannot mail a person more than three times.
		m.ConfirmSends++
		m.UpdatedAt = s.clock.Now()
		return updateMember(ctx, tx, m)
	})
	if err != nil {
		return Confirmation{}, err
	}
	from, err := s.confirm.From(ctx, workspaceID)
	if err != nil {
		return Confirmation{}, err
	}
	link := s.ConfirmURL(m.ID, s.clock.Now().Add(ConfirmTTL))
	vars := map[string]string{"confirm_url": link, "audience_name": aud.Name, "ttl_days": strconv.Itoa(int(ConfirmTTL.Hours() / 24)), "email": m.Email}
	subject, body := DefaultConfirmSubject, DefaultConfirmBody
	if aud.ConfirmationSubject != nil {
		subject = *aud.ConfirmationSubject
	}
	if aud.ConfirmationBody != nil {
		body = *aud.ConfirmationBody
	}
	raw, _ := json.Marshal(map[string]any{"from": from, "to": []string{m.Email}, "subject": render(subject, vars), "text": render(body, vars)})
	out, err := s.confirm.Mailer.Send(ctx, sending.Caller{WorkspaceID: workspaceID}, raw)
	if err != nil {
		return Confirmation{}, err
	}
	return Confirmation{MembershipID: m.ID, Email: m.Email, EmailID: out.ID, Status: m.Status, ConfirmURL: link, Sends: m.ConfirmSends}, nil
}

// render replaces {{ name }} (spaces optional) with vars; other text stays.
func render(tpl string, vars map[string]string) string {
	var b strings.Builder
	for {
		i := strings.Index(tpl, "{{")
		if i < 0 {
			b.WriteString(tpl)
			return b.String()
		}
		j := strings.Index(tpl[i:], "}}")
		if j < 0 {
			b.WriteString(tpl)
			return b.String()
		}
		name := strings.TrimSpace(tpl[i+2 : i+j])
		v, ok := vars[name]
		b.WriteString(tpl[:i])
		if ok {
			b.WriteString(v)
		} else {
			b.WriteString(tpl[i : i+j+2])
		}
		tpl = tpl[i+j+2:]
	}
}

// ConfirmURL is the stateless link for a membership: the membership id and
// expiry, signed with an HMAC under MAILROOM_SECRET_KEY.
func (s *Service) ConfirmURL(memberID string, expires time.Time) string {
	payload := memberID + "." + strconv.FormatInt(expires.Unix(), 10)
	return s.confirm.PublicURL + confirmPath + s.confirm.Box.Token(confirmPurpose, nil, []byte(payload))
}

func errBadLink() error {
	return apierr.InvalidRequest("This confirmation link is not valid or has expired.").
		WithNext("Ask the sender for a new confirmation email.")
}

// memberOfToken verifies a link's token and returns its membership id.
func (s *Service) memberOfToken(token string) (string, error) {
	if s.confirm.Box == nil || len(token) > 256 {
		return "", errBadLink()
	}
	payload, ok := s.confirm.Box.OpenToken(confirmPurpose, nil, token)
	if !ok {
		return "", errBadLink()
	}
	id, exp, ok := strings.Cut(string(payload), ".")
	unix, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || !s.clock.Now().Before(time.Unix(unix, 0)) {
		return "", errBadLink()
	}
	return id, nil
}

// CheckConfirmLink verifies a link without changing anything (the page a
// GET shows) and returns the membership's address and audience name.
func (s *Service) CheckConfirmLink(ctx context.Context, token string) (email, audience string, err error) {
	id, err := s.memberOfToken(token)
	if err != nil {
		return "", "", err
	}
	m, aud, err := memberAnyWorkspace(ctx, s.db, id)
	if err != nil {
		return "", "", notFound(err, errBadLink)
	}
	return m.Email, aud, nil
}

// Confirm uses a link: a pending membership becomes subscribed; using it
// again changes nothing. It answers the status after the call.
func (s *Service) Confirm(ctx context.Context, token string) (status, audience string, err error) {
	id, err := s.memberOfToken(token)
	if err != nil {
		return "", "", err
	}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		m, name, err := memberAnyWorkspace(ctx, tx, id)
		if err != nil {
			return notFound(err, errBadLink)
		}
		status, audience = m.Status, name
		if m.Status != StatusPending {
			return nil
		}
		m.Status, m.UpdatedAt = StatusSubscribed, s.clock.Now()
		status = m.Status
		if err := updateMember(ctx, tx, m); err != nil {
			return err
		}
		return queueSubscribed(ctx, tx, StatusPending, m, m.Email, m.UpdatedAt)
	})
	return status, audience, err
}
