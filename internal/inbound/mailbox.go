// Package inbound is Mailroom's receiving side: mailboxes and the identity
// a key is bound to (CONTRACT-WAVE2 "Workspace subdomain and mailboxes"),
// mail taken over SMTP (RFC 5321, parsed as RFC 5322 / MIME, RFC 2045-2049,
// 2047, 2231), the mailbox rules that run before storing, the stored
// messages and threads the API reads, and the email.received and
// email.filtered events. All its SQL is in store.go.
package inbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/domains"
	"mailroom/internal/groupcommit"
	"mailroom/internal/ids"
	"mailroom/internal/mailauth"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/workspaces"
)

// DefaultLocalPart is the local part of every workspace's first mailbox,
// inbox@<workspace subdomain>.
const DefaultLocalPart = "inbox"

// Mailbox is an address that receives.
type Mailbox struct {
	ID          string
	WorkspaceID string
	DomainID    string
	Address     string
	Name        string
	Rules       []Rule
	CreatedAt   time.Time
	UnreadCount int
}

// Domains is what the inbound side needs from the domains area.
type Domains interface {
	EnsureWorkspaceDomain(ctx context.Context, workspaceID string) (*domains.Domain, error)
	List(ctx context.Context, workspaceID string) ([]*domains.Domain, error)
}

// Workspaces is what the inbound side needs from the workspaces area.
type Workspaces interface {
	WithIDSuffix(ctx context.Context, suffix string) ([]workspaces.Workspace, error)
}

// Config is what the service needs.
type Config struct {
	DB            *store.DB
	Clock         clock.Clock
	Log           *slog.Logger
	Domains       Domains
	Workspaces    Workspaces
	ServiceDomain string // workspace subdomains live under it
	PublicURL     string // base of attachment urls in events
	// Resolver answers the SPF, DKIM and DMARC lookups
	// (MAILROOM_DNS_RESOLVER); nil uses the system's.
	Resolver *net.Resolver
	// Registry receives the receiving committer's metrics; nil keeps none.
	Registry prometheus.Registerer
}

// Service is the inbound area.
type Service struct {
	db    *store.DB
	clock clock.Clock
	log   *slog.Logger
	cfg   Config

	provisioned sync.Map // workspace id -> true once its default mailbox exists
	sender      Sender
	renderer    *bodyRenderer
	commits     *groupcommit.Committer[struct{}]
	resolver    *txtCache // the checks' lookups (cfg.Resolver), TXT answers cached
}

// New builds the service.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.ServiceDomain = strings.ToLower(cfg.ServiceDomain)
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	s := &Service{db: cfg.DB, clock: cfg.Clock, log: cfg.Log, cfg: cfg, renderer: newBodyRenderer()}
	var r mailauth.Resolver = net.DefaultResolver
	if cfg.Resolver != nil {
		r = cfg.Resolver
	}
	s.resolver = newTXTCache(r, cfg.Clock)
	// Received messages share commits (one fsync on SQLite for many). A
	// failing write fails alone: its batch runs again without it
	// (Optimistic). A savepoint per message made SQLite copy every page it
	// touched into the savepoint's journal.
	s.commits = groupcommit.New(groupcommit.Config[struct{}]{Name: "inbound", DB: cfg.DB, Log: cfg.Log,
		Isolation: groupcommit.Optimistic, MaxBatch: receiveBatch, FlushGather: receiveGather, Registry: cfg.Registry})
	return s
}

// receiveBatch bounds the messages of one commit (each may be megabytes);
// receiveGather: on SQLite a smaller batch waits for the last one's flush.
const (
	receiveBatch  = 64
	receiveGather = 4
)

// Start runs the receiving committer; Stop commits what is queued and ends
// it (a message received outside them commits alone).
func (s *Service) Start(ctx context.Context) error { return s.commits.Start(ctx) }

// Stop: see Start.
func (s *Service) Stop(context.Context) error {
	s.commits.Stop()
	return nil
}

var errMailboxNotFound = apierr.NotFound("mailbox")

// Provision makes the workspace's default mailbox, inbox@<workspace
// subdomain>, once. It is safe to call again and from several nodes.
func (s *Service) Provision(ctx context.Context, workspaceID string) error {
	if _, ok := s.provisioned.Load(workspaceID); ok {
		return nil
	}
	done, err := s.isProvisioned(ctx, workspaceID)
	if err != nil {
		return err
	}
	if !done {
		d, err := s.cfg.Domains.EnsureWorkspaceDomain(ctx, workspaceID)
		if err != nil {
			return fmt.Errorf("workspace subdomain: %w", err)
		}
		m := &Mailbox{ID: ids.New("mbx"), WorkspaceID: workspaceID, DomainID: d.ID, Address: DefaultLocalPart + "@" + d.Name, Rules: []Rule{}, CreatedAt: s.clock.Now()}
		err = s.db.InTx(ctx, func(tx *store.Tx) error {
			first, err := markProvisioned(ctx, tx, workspaceID, m.CreatedAt)
			if err != nil || !first {
				return err
			}
			return insertMailbox(ctx, tx, m)
		})
		if err != nil && !store.IsUniqueViolation(err) {
			return err
		}
	}
	s.provisioned.Store(workspaceID, true)
	return nil
}

// CreateMailbox adds a mailbox. address is a full address, or a local part
// on the workspace subdomain when it has no @.
func (s *Service) CreateMailbox(ctx context.Context, workspaceID, address, name string) (*Mailbox, error) {
	if err := s.Provision(ctx, workspaceID); err != nil {
		return nil, err
	}
	address = strings.TrimSpace(address)
	if !strings.Contains(address, "@") {
		if err := checkLocalPart(address); err != nil {
			return nil, err
		}
		d, err := s.cfg.Domains.EnsureWorkspaceDomain(ctx, workspaceID)
		if err != nil {
			return nil, err
		}
		address = address + "@" + d.Name
	}
	a, err := sending.ParseAddress(address)
	if err != nil {
		return nil, apierr.InvalidRequest("address %s.", err.Error())
	}
	if a.Name != "" {
		return nil, apierr.InvalidRequest("address must be a bare address, without a display name.")
	}
	addr := strings.ToLower(a.Email)
	local, host, _ := strings.Cut(addr, "@")
	if err := checkLocalPart(local); err != nil {
		return nil, err
	}
	if len(name) > 200 {
		return nil, apierr.InvalidRequest("name is longer than 200 characters.")
	}
	dom, err := s.receivingDomain(ctx, workspaceID, host)
	if err != nil {
		return nil, err
	}
	m := &Mailbox{ID: ids.New("mbx"), WorkspaceID: workspaceID, DomainID: dom.ID, Address: addr, Name: strings.TrimSpace(name), Rules: []Rule{}, CreatedAt: s.clock.Now()}
	err = s.db.InTx(ctx, func(tx *store.Tx) error { return insertMailbox(ctx, tx, m) })
	if store.IsUniqueViolation(err) {
		return nil, apierr.Conflict("mailbox_exists", "The address %s already receives for a mailbox.", addr).
			WithNext("Choose another address, or use the existing mailbox (GET /v1/mailboxes).")
	}
	if store.IsForeignKeyViolation(err) {
		return nil, domainNotVerified(host) // the domain went while we inserted
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// receivingDomain is the workspace's domain named host when it may hold
// mailboxes: the workspace subdomain, or a verified custom domain whose
// receiving MX record was found.
func (s *Service) receivingDomain(ctx context.Context, workspaceID, host string) (*domains.Domain, error) {
	ds, err := s.cfg.Domains.List(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if d.Name != host {
			continue
		}
		if d.Shared {
			return d, nil
		}
		if d.Status != domains.DomainVerified {
			return nil, domainNotVerified(host)
		}
		for _, r := range d.Records {
			if r.Record == domains.RecordMX && r.Name == d.Name && r.Status == domains.StatusVerified {
				return d, nil
			}
		}
		return nil, domainNotVerified(host).WithNext("Publish the domain's receiving MX record (records[] with record MX) and call POST /v1/domains/{id}/verify.")
	}
	return nil, domainNotVerified(host)
}

func domainNotVerified(host string) *apierr.Error {
	return apierr.Invalid422("domain_not_verified", "%s is not a verified domain of this workspace with its receiving MX record published.", host).
		WithNext("Add the domain with POST /v1/domains, publish its records (the MX record included) and verify it, or use the workspace subdomain.")
}

// checkLocalPart allows what mailbox addresses need: letters, digits, dot,
// hyphen and underscore; no "+", which is plus-addressing's separator.
func checkLocalPart(lp string) error {
	if lp == "" {
		return apierr.InvalidRequest("address or local_part is required.")
	}
	if len(lp) > 64 {
		return apierr.InvalidRequest("The local part is longer than 64 characters.")
	}
	for _, r := range lp {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
		default:
			return apierr.InvalidRequest("The local part %q may hold only letters, digits, '.', '-' and '_' ('+' is for plus-addressing).", lp)
		}
	}
	if strings.HasPrefix(lp, ".") || strings.HasSuffix(lp, ".") || strings.Contains(lp, "..") {
		return apierr.InvalidRequest("The local part %q has a misplaced dot.", lp)
	}
	return nil
}

// Mailboxes lists the workspace's mailboxes, oldest first; a bound key
// (boundTo != "") sees only its own.
func (s *Service) Mailboxes(ctx context.Context, workspaceID, boundTo string) ([]Mailbox, error) {
	if err := s.Provision(ctx, workspaceID); err != nil {
		return nil, err
	}
	return listMailboxes(ctx, s.db, workspaceID, boundTo)
}

// Mailbox reads one mailbox; another workspace's id, or another mailbox
// than the one a key is bound to, is not found.
func (s *Service) Mailbox(ctx context.Context, workspaceID, boundTo, id string) (*Mailbox, error) {
	if boundTo != "" && id != boundTo {
		return nil, errMailboxNotFound
	}
	ms, err := listMailboxes(ctx, s.db, workspaceID, id)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, errMailboxNotFound
	}
	return &ms[0], nil
}

// DeleteMailbox removes a mailbox with its messages and threads. Keys bound
// to it stay bound to nothing: they read nothing.
func (s *Service) DeleteMailbox(ctx context.Context, workspaceID, boundTo, id string) error {
	if boundTo != "" && id != boundTo {
		return errMailboxNotFound
	}
	err := s.db.InTx(ctx, func(tx *store.Tx) error { return deleteMailbox(ctx, tx, workspaceID, id) })
	if errors.Is(err, store.ErrNotFound) {
		return errMailboxNotFound
	}
	return err
}

// CountOnDomain counts the mailboxes on a domain (domains asks before
// deleting one, inside its transaction).
func (s *Service) CountOnDomain(ctx context.Context, q store.Querier, workspaceID, domainID string) (int, error) {
	return countOnDomain(ctx, q, workspaceID, domainID)
}

// Identity is what GET /v1/identity answers: the key and the mailbox it is
// bound to (nil when unbound) with its rules.
type Identity struct {
	KeyID   string
	Mailbox *Mailbox
	Rules   []Rule
}

// Identity reads the identity of a key.
func (s *Service) Identity(ctx context.Context, workspaceID, keyID, boundTo string) (*Identity, error) {
	id := &Identity{KeyID: keyID, Rules: []Rule{}}
	if boundTo == "" {
		return id, nil
	}
	ms, err := listMailboxes(ctx, s.db, workspaceID, boundTo)
	if err != nil {
		return nil, err
	}
	if len(ms) == 1 {
		id.Mailbox = &ms[0]
		id.Rules = ms[0].Rules
	}
	return id, nil
}

// SetRules replaces the bound mailbox's rules wholesale.
func (s *Service) SetRules(ctx context.Context, workspaceID, keyID, boundTo string, rules []Rule) (*Identity, error) {
	if boundTo == "" {
		return nil, apierr.Invalid422("no_mailbox", "This key is not bound to a mailbox, so it has no rules to set.").
			WithNext("Create a key with mailbox_id (POST /v1/api-keys) and set the rules with it.")
	}
	if err := ValidateRules(rules); err != nil {
		return nil, err
	}
	for i := range rules {
		rules[i] = rules[i].normalized()
	}
	err := s.db.InTx(ctx, func(tx *store.Tx) error { return setRules(ctx, tx, workspaceID, boundTo, rules) })
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.Invalid422("no_mailbox", "The mailbox this key is bound to no longer exists.")
	}
	if err != nil {
		return nil, err
	}
	return s.Identity(ctx, workspaceID, keyID, boundTo)
}

// lookupRecipient finds the mailbox an RCPT address reaches:
// local+tag@domain reaches local@domain. A workspace subdomain not yet
// provisioned (a workspace made by the CLI) is provisioned on the way.
func (s *Service) lookupRecipient(ctx context.Context, rcpt string) (*Mailbox, error) {
	addr := strings.ToLower(strings.TrimSpace(rcpt))
	local, host, ok := strings.Cut(addr, "@")
	if !ok || local == "" || host == "" || strings.Contains(host, "@") {
		return nil, store.ErrNotFound
	}
	if base, _, plus := strings.Cut(local, "+"); plus {
		local = base
	}
	addr = local + "@" + host
	m, err := mailboxByAddress(ctx, s.db, addr)
	if !errors.Is(err, store.ErrNotFound) {
		return m, err
	}
	// A workspace subdomain: <slug>-<8 id characters>.<service domain>.
	label, ok := strings.CutSuffix(host, "."+s.cfg.ServiceDomain)
	if !ok || s.cfg.Workspaces == nil || strings.Contains(label, ".") {
		return nil, store.ErrNotFound
	}
	dash := strings.LastIndexByte(label, '-')
	if dash < 0 || len(label)-dash-1 != 8 {
		return nil, store.ErrNotFound
	}
	wss, err := s.cfg.Workspaces.WithIDSuffix(ctx, label[dash+1:])
	if err != nil {
		return nil, err
	}
	for _, w := range wss {
		if _, ok := s.provisioned.Load(w.ID); ok {
			continue
		}
		if domains.WorkspaceDomainName(w.ID, w.Name, s.cfg.ServiceDomain) != host {
			continue
		}
		if err := s.Provision(ctx, w.ID); err != nil {
			return nil, err
		}
		return mailboxByAddress(ctx, s.db, addr)
	}
	return nil, store.ErrNotFound
}

// SentFrom maps the emails among ids to the mailbox each was sent from: the
// mailbox of its workspace whose address is its From (webhooks.SentFrom).
func SentFrom(ctx context.Context, q store.Querier, ids []string) (map[string]string, error) {
	senders, err := sending.Senders(ctx, q, ids)
	if err != nil || len(senders) == 0 {
		return nil, err
	}
	var ws []string
	for _, sd := range senders {
		if !slices.Contains(ws, sd.WorkspaceID) {
			ws = append(ws, sd.WorkspaceID)
		}
	}
	boxes, err := mailboxAddresses(ctx, q, ws)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(senders))
	for id, sd := range senders {
		for _, b := range boxes[sd.WorkspaceID] {
			if sending.FromIs(sd.From, b[1]) {
				out[id] = b[0]
			}
		}
	}
	return out, nil
}
