package sending

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/clock"
	"mailroom/internal/mailmetrics"
	"mailroom/internal/policy"
	"mailroom/internal/store"
	"mailroom/internal/templates"
	"mailroom/internal/workspaces"
)

// Domains is what sending needs from the domains area: the state of a
// workspace's sending domain, "verified", "pending", or "" when the
// workspace has no such domain.
type Domains interface {
	SendingStatus(ctx context.Context, workspaceID, domain string) (string, error)
}

// Workspaces is what sending needs from the workspaces area: the owner of
// a workspace, for the sandbox and the sending lock.
type Workspaces interface {
	Workspace(ctx context.Context, id string) (*workspaces.Workspace, error)
}

// Config builds a Service.
type Config struct {
	DB            *store.DB
	Clock         clock.Clock
	ServiceDomain string  // where the sandbox sender and the test addresses live
	Domains       Domains // nil: only the sandbox sender can send
	// Workspaces answers a send whose caller did not bring the owner
	// (Caller.OwnerEmail); nil: the workspaces area over DB.
	Workspaces Workspaces
	Logger     *slog.Logger
	// Committers is the number of group-commit writers; 0 picks 1: SQLite
	// has one writer, and on PostgreSQL one committer with two commits in
	// flight (pipeMin) beat two plain ones (docs/performance.md).
	Committers int
	// Templates renders a send's template; nil: every template answers
	// invalid_template.
	Templates Templates
	// Topics checks a send's topic; nil: every topic answers
	// topic_not_found.
	Topics Topics
	// Registry receives the group committer's metrics; nil keeps none.
	Registry prometheus.Registerer
	// Policy admits each send (quotas, caps, throttles, pauses; see
	// internal/policy); nil admits every send.
	Policy Policy
	// Meter counts accepted emails; nil counts nothing.
	Meter *mailmetrics.Meter
}

// Policy is what sending asks the policy area about each send: at
// acceptance, and again for a scheduled send when its time comes.
type Policy interface {
	Admit(ctx context.Context, m policy.Send) (*policy.Ticket, error)
	// Check answers what Admit would and counts nothing (a dry run).
	Check(ctx context.Context, m policy.Send) error
}

// Templates is what sending needs from the templates area: the published
// version of a template (by id or slug) rendered with a send's variables,
// answering apierr errors (invalid_template, template_not_published,
// template_variables_missing).
type Templates interface {
	ForSend(ctx context.Context, workspaceID, ref string, vars map[string]any) (templates.Rendered, error)
}

// Caller is who is sending or reading: the workspace and the API key. A key
// holding only mail:send (OwnOnly) sees only the emails it sent.
type Caller struct {
	WorkspaceID string
	KeyID       string
	OwnOnly     bool
	// Owner of the workspace, when the caller already knows it (the API
	// reads it with the key); empty means read it from the workspace row.
	OwnerEmail     string
	OwnerConfirmed bool
	// ConfirmKey, when set, reads the caller's API key again: the key was
	// taken on trust (workspaces.AuthenticateForSend). A send's commit reads
	// the key itself; every other answer is given only after ConfirmKey.
	ConfirmKey func(context.Context) error
	// FromDomain, when set, is the only domain the caller's key may send
	// from (a key restricted to a domain).
	FromDomain string
	// FromAddress, when set, is the only address the caller's key may send
	// from and read the emails of (a key bound to a mailbox: its address).
	FromAddress string
}

// CallerFor is the caller an authenticated key acts as: a key without the
// workspace scope sees only the emails it sent.
func CallerFor(k *workspaces.Key) Caller {
	c := Caller{WorkspaceID: k.WorkspaceID, KeyID: k.ID, OwnOnly: !k.HasScope(workspaces.ScopeWorkspace), OwnerEmail: k.OwnerEmail, OwnerConfirmed: k.OwnerConfirmed,
		FromDomain: k.DomainName, FromAddress: k.MailboxAddress}
	if k.Unconfirmed {
		c.ConfirmKey = k.Confirm
	}
	return c
}

// Service books emails (now, in batches, scheduled), answers idempotent
// repeats, simulates the test addresses and reads emails back.
type Service struct {
	db            *store.DB
	clock         clock.Clock
	log           *slog.Logger
	serviceDomain string
	sandboxFrom   string
	domains       atomic.Pointer[domainsBox]
	workspaces    Workspaces
	templates     Templates
	topics        Topics
	writer        *groupWriter
	pol           Policy
	watch         ScheduleWatcher
	meter         *mailmetrics.Meter
	mailboxes     Mailboxes  // autoreply@'s replies (SetMailboxes)
	engager       Engager    // opened@ and clicked@ (SetEngager)
	bodies        BodySource // renders emails stored without a body (SetBodySource)
	preview       Previewer  // builds a dry run's message; nil: none built

	promoteStop, promoteDone chan struct{}
	inflight                 inflight
}

type domainsBox struct{ d Domains }

// New builds the service; Start begins its group committer.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Workspaces == nil {
		cfg.Workspaces = workspaces.New(cfg.DB, cfg.Clock)
	}
	s := &Service{
		db:            cfg.DB,
		clock:         cfg.Clock,
		log:           cfg.Logger,
		serviceDomain: cfg.ServiceDomain,
		sandboxFrom:   "onboarding@" + cfg.ServiceDomain,
		templates:     cfg.Templates,
		topics:        cfg.Topics,
		workspaces:    cfg.Workspaces,
		writer:        newGroupWriter(cfg.DB, cfg.Logger, cfg.Committers, cfg.Registry),
		inflight:      inflight{m: map[string]string{}},
		pol:           cfg.Policy,
		meter:         cfg.Meter,
	}
	s.SetDomains(cfg.Domains)
	return s
}

// SetDomains installs (or replaces) the domains lookup. Safe at any time.
func (s *Service) SetDomains(d Domains) { s.domains.Store(&domainsBox{d}) }

// Start runs the group committer until Stop.
func (s *Service) Start(ctx context.Context) error {
	if err := s.writer.start(ctx); err != nil {
		return err
	}
	s.promoteStop, s.promoteDone = make(chan struct{}), make(chan struct{})
	go s.promoteLoop(ctx, s.promoteStop, s.promoteDone)
	return nil
}

// Stop commits what is queued and stops the committer. A second call does
// nothing.
func (s *Service) Stop(ctx context.Context) error {
	if s.promoteStop != nil {
		close(s.promoteStop)
		<-s.promoteDone
		s.promoteStop = nil
	}
	s.writer.shutdown()
	return nil
}

// rules are the validation rules for one workspace.
func (s *Service) rules(workspaceID string) Rules {
	r := Rules{ServiceDomain: s.serviceDomain}
	if s.templates != nil {
		// Existence is answered when the template renders (see withTemplate).
		r.TemplateExists = func(string) bool { return true }
	}
	return r
}

// inflight remembers idempotency keys whose first request is still being
// booked on this node, so a concurrent duplicate answers
// idempotency_in_flight instead of waiting.
type inflight struct {
	mu sync.Mutex
	m  map[string]string // workspace + key -> fingerprint
}

func (f *inflight) acquire(ws, key, fp string) (held string, ok bool) {
	k := ws + "\x00" + key
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, busy := f.m[k]; busy {
		return cur, false
	}
	f.m[k] = fp
	return "", true
}

func (f *inflight) release(ws, key string) {
	f.mu.Lock()
	delete(f.m, ws+"\x00"+key)
	f.mu.Unlock()
}

// SandboxFrom is the sender every workspace may use before it verifies a
// domain (to its own and the test addresses only).
func (s *Service) SandboxFrom() string { return s.sandboxFrom }
