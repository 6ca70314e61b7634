package inbound

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/ids"
	"mailroom/internal/smtpin"
	"mailroom/internal/store"
)

// Spam verdicts (CONTRACT-WAVE2): a check that could not run is unchecked,
// never pass. See decideVerdict and docs/decisions.md.
const (
	VerdictPass      = "pass"
	VerdictSuspect   = "suspect"
	VerdictSpam      = "spam"
	VerdictUnchecked = "unchecked"
)

// Auth is the auth block: spf, dkim, dmarc, each pass, fail or none.
type Auth struct {
	SPF   string `json:"spf"`
	DKIM  string `json:"dkim"`
	DMARC string `json:"dmarc"`
}

// Route implements smtpin.Router: a mailbox address (plus-addressing
// reaches the base mailbox) takes mail; anything else is not ours.
func (s *Service) Route(ctx context.Context, rcpt string) (smtpin.Recipient, error) {
	m, err := s.lookupRecipient(ctx, rcpt)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &mailboxRecipient{s: s, m: m}, nil
}

var _ smtpin.Router = (*Service)(nil)

type mailboxRecipient struct {
	s *Service
	m *Mailbox
}

func (r *mailboxRecipient) Key() string { return "mailbox:" + r.m.ID }

// Deliver stores the message for the mailbox; it returns once the message
// (or, for a dropping rule, its email.filtered event) is committed durably.
func (r *mailboxRecipient) Deliver(ctx context.Context, env smtpin.Envelope, raw []byte) error {
	_, err := r.s.Receive(ctx, r.m, env, raw)
	return err
}

// Received is the outcome of one delivery to a mailbox.
type Received struct {
	MessageID string // "" when a rule dropped it
	ThreadID  string
	Action    string // the rule action that applied, "" for none
}

// Receive parses, checks and stores one message for mailbox m and raises
// email.received (or email.filtered when a rule drops it), all in one
// transaction.
func (s *Service) Receive(ctx context.Context, m *Mailbox, env smtpin.Envelope, raw []byte) (*Received, error) {
	p := parseKept(raw, false)
	now := s.clock.Now()
	ao := s.authenticate(ctx, env, raw, p)
	msg := received(m, env, raw, p, ao, now)

	action := firstMatch(m.Rules, msg.From, append(append([]string{}, p.To...), p.Cc...), p.Subject)
	if p.FromAddr != "" && action == "" && p.FromAddr != msg.From {
		action = firstMatch(m.Rules, p.FromAddr, append(append([]string{}, p.To...), p.Cc...), p.Subject)
	}
	switch action {
	case ActionDrop:
		err := s.commit(func(ctx context.Context, tx *store.Tx) error {
			data, err := json.Marshal(filteredData{Mailbox: m.Address, From: msg.From, To: p.To, Subject: p.Subject, MessageIDHeader: nullable(p.MessageID), Action: ActionDrop})
			if err != nil {
				return err
			}
			_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: m.WorkspaceID, MailboxID: m.ID, Type: events.EmailFiltered, CreatedAt: now, RawData: data})
			return err
		})
		s.logReceived(m, env, raw, ao, "filtered", err)
		return &Received{Action: action}, err
	case ActionArchive:
		msg.Archived = true
	case ActionMarkRead:
		msg.Unread = false
	}
	row, rc := newMessageRow(msg), cutBodies(raw, msg.Text, msg.HTML)
	err := s.commit(func(ctx context.Context, tx *store.Tx) error {
		if err := s.storeReceived(ctx, tx, msg, row, rc); err != nil {
			return err
		}
		data, err := json.Marshal(receivedRef{Message: msg.ID, PublicURL: s.cfg.PublicURL})
		if err != nil {
			return err
		}
		_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: m.WorkspaceID, MailboxID: m.ID, Type: events.EmailReceived, CreatedAt: now, RawData: data})
		return err
	})
	rc.release()
	s.logReceived(m, env, raw, ao, "stored", err)
	if err != nil {
		return nil, err
	}
	return &Received{MessageID: msg.ID, ThreadID: msg.ThreadID, Action: action}, nil
}

// logReceived writes the operator's log line for one received message:
// envelope, size and verdicts, never the body.
func (s *Service) logReceived(m *Mailbox, env smtpin.Envelope, raw []byte, ao authOutcome, outcome string, err error) {
	if err != nil {
		s.log.Error("received message not stored", "mailbox_id", m.ID, "from", env.MailFrom, "to", env.Rcpt, "size", len(raw), "error", err)
		return
	}
	s.log.Info("received message", "mailbox_id", m.ID, "from", env.MailFrom, "to", env.Rcpt, "remote_ip", env.RemoteIP.String(),
		"tls", env.TLS, "size", len(raw), "spf", ao.Auth.SPF, "dkim", ao.Auth.DKIM, "dmarc", ao.Auth.DMARC, "outcome", outcome)
}

// commit runs fn in a transaction shared with other deliveries and
// returns once it is on disk, whatever the caller's context: the 250 waits
// for it.
func (s *Service) commit(fn func(context.Context, *store.Tx) error) error {
	return <-s.commits.Submit(struct{}{}, fn)
}

// Seed stores raws for mailbox m as received mail, parsed, threaded and
// indexed as Receive stores it, in one transaction, without the checks
// that need the SMTP session (auth none, verdict unchecked) and without
// events: the bulk path bench/inbound fills its search corpus through.
func (s *Service) Seed(ctx context.Context, m *Mailbox, raws [][]byte) error {
	now := s.clock.Now()
	none := authOutcome{Auth: Auth{SPF: authNone, DKIM: authNone, DMARC: authNone}}
	msgs := make([]*Message, len(raws))
	rcs := make([]rawCopy, len(raws))
	for i, raw := range raws {
		p := parseKept(raw, false)
		msgs[i] = received(m, smtpin.Envelope{MailFrom: p.FromAddr}, raw, p, none, now)
		rcs[i] = cutBodies(raw, msgs[i].Text, msgs[i].HTML)
	}
	defer func() {
		for _, rc := range rcs {
			rc.release()
		}
	}()
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		for i, msg := range msgs {
			if err := s.storeReceived(ctx, tx, msg, nil, rcs[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// parseKept parses raw, keeping the parts' bytes when data is set; a
// header block that cannot be read at all keeps the bytes as the text body.
func parseKept(raw []byte, data bool) *Parsed {
	p, err := parse(raw, data)
	if err != nil {
		p = &Parsed{Headers: map[string]string{}, To: []string{}, Cc: []string{}, References: []string{}}
		t := clean(string(raw))
		p.Text = &t
	}
	return p
}

// received is the stored form of a message received for mailbox m.
func received(m *Mailbox, env smtpin.Envelope, raw []byte, p *Parsed, ao authOutcome, now time.Time) *Message {
	msg := &Message{
		ID: ids.New("msg"), WorkspaceID: m.WorkspaceID, MailboxID: m.ID, Mailbox: m.Address, Direction: DirectionReceived,
		MailFrom: clean(env.MailFrom), Parsed: *p, Auth: ao.Auth, Unread: true, Size: int64(len(raw)), ReceivedAt: now,
	}
	msg.Headers["authentication-results"] = joinHeader(msg.Headers["authentication-results"], ao.Header)
	msg.From = msg.MailFrom
	if msg.From == "" {
		msg.From = p.FromAddr
	}
	msg.Snippet = snippet(p.Text, p.HTML)
	msg.SpamVerdict = decideVerdict(ao, p)
	msg.Automated = p.Automated || env.MailFrom == ""
	return msg
}

// storeReceived threads msg and writes it (row: its values, see
// newMessageRow) with its raw copy.
func (s *Service) storeReceived(ctx context.Context, tx *store.Tx, msg *Message, row messageRow, rc rawCopy) error {
	if err := s.thread(ctx, tx, msg); err != nil {
		return err
	}
	return insertMessage(ctx, tx, msg, row, &rc)
}

func joinHeader(old, v string) string {
	if old == "" {
		return v
	}
	return old + "; " + v
}

type filteredData struct {
	Mailbox         string   `json:"mailbox"`
	From            string   `json:"from"`
	To              []string `json:"to"`
	Subject         string   `json:"subject"`
	MessageIDHeader *string  `json:"message_id_header"`
	Action          string   `json:"action"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// thread finds the conversation msg belongs to (by Message-ID chain, then
// by subject for a reply that lost its headers) or starts one.
func (s *Service) thread(ctx context.Context, tx *store.Tx, msg *Message) error {
	chain := append([]string{}, msg.References...)
	if msg.InReplyTo != "" {
		chain = append(chain, msg.InReplyTo)
	}
	key, reply := subjectKey(msg.Subject)
	id, err := threadByMessageIDs(ctx, tx, msg.WorkspaceID, msg.MailboxID, chain)
	if errors.Is(err, store.ErrNotFound) && len(chain) == 0 && reply && key != "" {
		id, err = threadBySubject(ctx, tx, msg.MailboxID, key, msg.ReceivedAt.Add(-30*24*time.Hour))
	}
	if errors.Is(err, store.ErrNotFound) {
		msg.ThreadID = ids.New("thr")
		return insertThread(ctx, tx, msg, key)
	}
	if err != nil {
		return err
	}
	msg.ThreadID = id
	_, err = touchThread(ctx, tx, id, msg.ReceivedAt)
	return err
}

// decideVerdict is the local spam verdict (docs/decisions.md): spam when
// DMARC fails and the domain asks receivers to quarantine or reject;
// suspect when DMARC fails under p=none, SPF or DKIM fails, the message has
// the marks of junk (no From, Date and Message-ID) or carries an executable
// attachment; pass when some check passed and none failed; unchecked when
// nothing could be checked.
func decideVerdict(ao authOutcome, p *Parsed) string {
	a := ao.Auth
	if a.DMARC == authFail && (ao.DMARCPolicy == "quarantine" || ao.DMARCPolicy == "reject") {
		return VerdictSpam
	}
	if a.DMARC == authFail || a.SPF == authFail || a.DKIM == authFail {
		return VerdictSuspect
	}
	if p.FromAddr == "" && p.Date == "" && p.MessageID == "" {
		return VerdictSuspect
	}
	for _, pt := range p.Parts {
		if executable(pt.Filename) {
			return VerdictSuspect
		}
	}
	if a.SPF == authPass || a.DKIM == authPass || a.DMARC == authPass {
		return VerdictPass
	}
	return VerdictUnchecked
}

// executable reports a filename that Windows would run when opened, the
// classic malware carrier (a double extension such as invoice.pdf.exe too).
func executable(name string) bool {
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return false
	}
	switch strings.ToLower(name[dot+1:]) {
	case "exe", "scr", "com", "pif", "bat", "cmd", "vbs", "vbe", "js", "jse", "wsf", "wsh", "msi", "hta", "cpl", "jar", "lnk", "ps1":
		return true
	}
	return false
}

// attachmentURL is where an attachment's bytes are read.
func attachmentURL(publicURL, messageID, filename string) string {
	return publicURL + "/v1/messages/" + messageID + "/attachments/" + url.PathEscape(filename)
}
