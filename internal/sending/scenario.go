package sending

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/smtpin"
	"mailroom/internal/store"
)

// A scenario's later steps (docs/test-addresses.md), each a scheduled job.
const (
	stepDeliver   = "deliver"   // the retry after a soft bounce or deferral succeeds
	stepAutoReply = "autoreply" // an out-of-office reply reaches the sender's mailbox
	stepEngage    = "engage"    // a person opens the message (and clicks its first link)
)

// ScenarioArgs runs one later step of a scenario address.
type ScenarioArgs struct {
	EmailID     string `json:"email_id"`
	WorkspaceID string `json:"workspace_id"`
	Outcome     string `json:"outcome"`
	Step        string `json:"step"`
}

// Kind names the job in the queue.
func (ScenarioArgs) Kind() string { return "sending.scenario" }

// ScenarioWorker runs ScenarioArgs.
type ScenarioWorker struct {
	river.WorkerDefaults[ScenarioArgs]
	S *Service
}

// Work plays the step.
func (w *ScenarioWorker) Work(ctx context.Context, job *river.Job[ScenarioArgs]) error {
	a := job.Args
	switch a.Step {
	case stepDeliver:
		return w.S.writer.do(ctx, func(ctx context.Context, tx *store.Tx, _ *acceptBatch) error {
			return w.S.simulateOne(ctx, tx, EmailRef{EmailID: a.EmailID, WorkspaceID: a.WorkspaceID, Outcome: TestDelivered})
		})
	case stepAutoReply:
		return w.S.autoReply(ctx, a.WorkspaceID, a.EmailID)
	case stepEngage:
		return w.S.engage(ctx, a.WorkspaceID, a.EmailID, a.Outcome == ScenarioClicked)
	}
	return nil
}

// scheduleStep books a scenario's next step after its delay, in tx.
func (s *Service) scheduleStep(tx *store.Tx, r EmailRef, step string, now time.Time) {
	tx.AddJob(river.InsertManyParams{Args: ScenarioArgs{EmailID: r.EmailID, WorkspaceID: r.WorkspaceID, Outcome: r.Outcome, Step: step},
		InsertOpts: &river.InsertOpts{ScheduledAt: now.Add(r.Delay)}})
}

// Mailboxes finds the mailbox an address reaches (inbound.Service.Route);
// nil when it is no mailbox of this node.
type Mailboxes interface {
	Route(ctx context.Context, rcpt string) (smtpin.Recipient, error)
}

// Engager records a person's open, and click on the first tracked link,
// of a delivered email through the tracking service (app wires it).
type Engager interface {
	Engage(ctx context.Context, workspaceID, emailID, fromDomain, html string, handedOver time.Time, click bool) error
}

// SetMailboxes installs the mailbox lookup autoreply@ answers through.
func (s *Service) SetMailboxes(m Mailboxes) { s.mailboxes = m }

// SetEngager installs what opened@ and clicked@ engage through.
func (s *Service) SetEngager(e Engager) { s.engager = e }

// autoReply delivers an RFC 3834 out-of-office reply to the email's
// sender when the sender is a mailbox of this node (else nothing happens:
// the reply would leave for a real server).
func (s *Service) autoReply(ctx context.Context, ws, id string) error {
	if s.mailboxes == nil {
		return nil
	}
	e, from, err := s.scenarioEmail(ctx, ws, id)
	if e == nil {
		return err
	}
	rcpt, err := s.mailboxes.Route(ctx, from.Email)
	if err != nil || rcpt == nil {
		return err
	}
	replier := "autoreply@" + s.serviceDomain
	for _, r := range e.Recipients {
		if kind, _, ok := ClassifyTestAddress(r, s.serviceDomain); ok && kind == ScenarioAutoReply {
			replier = r
			break
		}
	}
	now := s.clock.Now().UTC()
	var b strings.Builder
	fmt.Fprintf(&b, "From: Out of Office <%s>\r\nTo: %s\r\nSubject: Automatic reply: %s\r\n", replier, from.Email, oneLine(e.Subject))
	fmt.Fprintf(&b, "Date: %s\r\nMessage-ID: <autoreply.%s@%s>\r\n", now.Format(time.RFC1123Z), id, s.serviceDomain)
	if e.MessageID != "" {
		fmt.Fprintf(&b, "In-Reply-To: %s\r\nReferences: %s\r\n", e.MessageID, e.MessageID)
	}
	b.WriteString("Auto-Submitted: auto-replied\r\nX-Autoreply: yes\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	b.WriteString("I am out of the office and will read your message when I return.\r\n\r\n(An automatic reply from a Mailroom scenario address.)\r\n")
	// RFC 3834 3.3: an automatic response goes to the null return path.
	return rcpt.Deliver(ctx, smtpin.Envelope{Helo: s.serviceDomain, Rcpt: from.Email}, []byte(b.String()))
}

// oneLine keeps a subject on one header line.
func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// engage has a person open the email and, for clicked@, follow its first
// tracked link: nothing when tracking was off for it.
func (s *Service) engage(ctx context.Context, ws, id string, click bool) error {
	if s.engager == nil {
		return nil
	}
	e, from, err := s.scenarioEmail(ctx, ws, id)
	if e == nil {
		return err
	}
	return s.engager.Engage(ctx, ws, id, domainOf(from.Email), e.HTML, e.CreatedAt, click)
}

// scenarioEmail reads a scenario's email and its sender; nil (and no error)
// when it is gone or its From no longer parses: the scenario just ends.
func (s *Service) scenarioEmail(ctx context.Context, ws, id string) (*emailRow, Address, error) {
	e, err := loadFull(ctx, s.db, Caller{WorkspaceID: ws}, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, Address{}, nil
	}
	if err == nil {
		err = s.withBody(ctx, e)
	}
	if err != nil {
		return nil, Address{}, err
	}
	from, err := ParseAddress(e.From)
	if err != nil {
		return nil, Address{}, nil
	}
	return e, from, nil
}
