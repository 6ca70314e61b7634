package smtpin

import (
	"bytes"
	"context"
	"mime"
	"net/mail"
	"strings"
	"time"
)

// The mailto: unsubscribe (RFC 2369 List-Unsubscribe, RFC 8058 section
// 3.2): mail to Options.UnsubscribeAddress whose subject carries the
// signed token of the unsubscribe link. This file is the whole hook; the
// session calls it at RCPT and DATA.

// UnsubscribeFunc acts on the subject of a mail to the unsubscribe
// address. An error (a tampered or expired token) is logged; the mail is
// accepted all the same, since a refusal would only bounce to a sender who
// cannot do better.
type UnsubscribeFunc func(ctx context.Context, subject string) error

// rcptUnsubscribe reports whether to is the unsubscribe address, and notes
// that the message is to be read as an unsubscribe.
func (ss *session) rcptUnsubscribe(to string) bool {
	addr := ss.s.opts.UnsubscribeAddress
	if addr == "" || ss.s.opts.Unsubscribe == nil || !strings.EqualFold(strings.TrimSpace(to), addr) {
		return false
	}
	ss.unsubscribe = true
	return true
}

// dataUnsubscribe reads the subject of a message accepted for the
// unsubscribe address and hands it on.
func (ss *session) dataUnsubscribe(raw []byte) {
	if !ss.unsubscribe {
		return
	}
	subject := ""
	if m, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
		subject = m.Header.Get("Subject")
		if dec, err := new(mime.WordDecoder).DecodeHeader(subject); err == nil {
			subject = dec
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ss.s.opts.Unsubscribe(ctx, subject); err != nil {
		ss.s.opts.Log.Info("mail to the unsubscribe address changed nothing", "err", err)
	}
}
