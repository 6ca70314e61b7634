package smtpin

import (
	"bytes"
	"context"
	"log/slog"
	"mime"
	"net/mail"
	"strings"
)

// The mailto: unsubscribe (RFC 2369 List-Unsubscribe, RFC 8058 section
// 3.2): mail to one address whose subject carries the signed token of the
// unsubscribe link. It is a Router placed before the mailboxes.

// UnsubscribeFunc acts on the subject of a mail to the unsubscribe
// address. An error (a tampered or expired token) is logged; the mail is
// accepted all the same, since a refusal would only bounce to a sender who
// cannot do better.
type UnsubscribeFunc func(ctx context.Context, subject string) error

// UnsubscribeRouter takes RCPTs to Address and hands each message's
// subject to Act.
type UnsubscribeRouter struct {
	Address string
	Act     UnsubscribeFunc
	Log     *slog.Logger
}

// Route answers the router itself for Address, nothing for the rest.
func (u UnsubscribeRouter) Route(_ context.Context, rcpt string) (Recipient, error) {
	if u.Address == "" || u.Act == nil || !strings.EqualFold(strings.TrimSpace(rcpt), u.Address) {
		return nil, nil
	}
	return u, nil
}

// Key makes repeated RCPTs to the address one delivery.
func (u UnsubscribeRouter) Key() string { return "unsubscribe:" + strings.ToLower(u.Address) }

// Deliver reads the subject and acts on it; it never asks for a retry.
func (u UnsubscribeRouter) Deliver(ctx context.Context, _ Envelope, raw []byte) error {
	subject := ""
	if m, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
		subject = m.Header.Get("Subject")
		if dec, err := new(mime.WordDecoder).DecodeHeader(subject); err == nil {
			subject = dec
		}
	}
	if err := u.Act(ctx, subject); err != nil && u.Log != nil {
		u.Log.Info("mail to the unsubscribe address changed nothing", "err", err)
	}
	return nil
}
