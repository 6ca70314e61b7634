package policy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/mailauth"
	"mailroom/internal/store"
)

// Hold kinds (policy_holds.kind).
const (
	KindWorkspacePaused    = "workspace_paused"
	KindAddressPaused      = "address_paused"
	KindAddressReceiveOnly = "address_receive_only"
	KindBlockedDomain      = "blocked_domain"
	// KindThrottled marks a workspace the cold-sending throttle refused
	// (value ""): it refuses nothing itself, it says workspace.throttled
	// was raised and workspace.resumed is due after a clean day.
	KindThrottled = "throttled"
)

// Hold is one stored hold.
type Hold struct {
	WorkspaceID string
	Kind        string
	Value       string // the address or domain; "" for a paused workspace
	Reason      string
	CreatedAt   time.Time
}

// holds is every hold as of version, indexed for the send path.
type holds struct {
	version   int64
	paused    map[string]Hold            // workspace -> its pause
	address   map[[2]string]string       // (workspace, address) -> kind
	blocked   map[string]map[string]bool // workspace -> blocked recipient domains
	throttled map[string]Hold            // workspace -> its cold-sending throttle
}

// checkHolds refuses a send that a hold forbids.
func (s *Service) checkHolds(m Send) error {
	h := s.holds.Load()
	if len(h.paused) > 0 {
		if p, ok := h.paused[m.WorkspaceID]; ok {
			return apierr.Forbidden("workspace_paused", "Sending is paused for this workspace: %s.", p.Reason).
				WithNext("Do not retry. Bring the bounce and complaint rates down (clean the list); the operator releases the pause with `mailroom workspace resume --id " + m.WorkspaceID + "`.")
		}
	}
	if len(h.address) > 0 {
		switch h.address[[2]string{m.WorkspaceID, m.From}] {
		case KindAddressPaused:
			return apierr.Invalid422("address_paused", "The sending address %s is paused.", m.From).
				WithNext("Send from another address, or ask the operator to release it (`mailroom address set --state active`).")
		case KindAddressReceiveOnly:
			return apierr.Invalid422("address_receive_only", "The address %s may receive mail but never send it.", m.From).
				WithNext("Send from another address of the workspace.")
		}
	}
	if b := h.blocked[m.WorkspaceID]; len(b) > 0 {
		for _, r := range m.Recipients {
			if d := mailauth.DomainOf(r); b[d] {
				return apierr.Invalid422("recipient_blocked_by_policy", "The workspace's policy blocks mail to %s (domain %s); nothing was sent.", r, d).
					WithNext("Remove the recipient, or lift the block with `mailroom workspace unblock-domain`.")
			}
		}
	}
	return nil
}

// Refresh reads the holds again when policy_version moved (every
// HoldsPoll, and after a change made through this node).
func (s *Service) Refresh(ctx context.Context) error {
	v, err := readVersion(ctx, s.db)
	if err != nil {
		return err
	}
	if v == s.holds.Load().version {
		return nil
	}
	list, err := readHolds(ctx, s.db)
	if err != nil {
		return err
	}
	h := &holds{version: v, paused: map[string]Hold{}, address: map[[2]string]string{}, blocked: map[string]map[string]bool{}, throttled: map[string]Hold{}}
	for _, x := range list {
		switch x.Kind {
		case KindWorkspacePaused:
			h.paused[x.WorkspaceID] = x
		case KindAddressPaused, KindAddressReceiveOnly:
			h.address[[2]string{x.WorkspaceID, x.Value}] = x.Kind
		case KindThrottled:
			h.throttled[x.WorkspaceID] = x
		case KindBlockedDomain:
			if h.blocked[x.WorkspaceID] == nil {
				h.blocked[x.WorkspaceID] = map[string]bool{}
			}
			h.blocked[x.WorkspaceID][x.Value] = true
		}
	}
	s.holds.Store(h)
	return nil
}

// Paused reports whether the workspace is paused, as this node last read it.
func (s *Service) Paused(workspaceID string) bool {
	_, ok := s.holds.Load().paused[workspaceID]
	return ok
}

// Standing is a workspace's standing state as this node last read it:
// its pause and its cold-sending throttle, nil when not held.
type Standing struct{ Paused, Throttled *Hold }

// Standing reads the workspace's pause and throttle (the dashboard's
// overview shows them as a state, beside the events that announced them).
func (s *Service) Standing(workspaceID string) Standing {
	h := s.holds.Load()
	var st Standing
	if p, ok := h.paused[workspaceID]; ok {
		st.Paused = &p
	}
	if t, ok := h.throttled[workspaceID]; ok {
		st.Throttled = &t
	}
	return st
}

// Pause pauses a workspace and raises workspace.paused, once: pausing a
// paused workspace changes nothing and answers false.
func (s *Service) Pause(ctx context.Context, workspaceID, reason string, data map[string]any) (bool, error) {
	now := s.clock.Now().UTC()
	var changed bool
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		changed, err = putHold(ctx, tx, Hold{WorkspaceID: workspaceID, Kind: KindWorkspacePaused, Reason: reason, CreatedAt: now})
		if err != nil || !changed {
			return err
		}
		d := map[string]any{"workspace_id": workspaceID, "reason": reason, "paused_at": now.Format(time.RFC3339)}
		for k, v := range data {
			d[k] = v
		}
		_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: workspaceID, Type: events.WorkspacePaused, CreatedAt: now, Data: d})
		return err
	})
	if err != nil {
		return false, err
	}
	return changed, s.Refresh(ctx)
}

// Resume releases a paused workspace and raises workspace.resumed; a
// workspace that is not paused answers false and raises nothing.
func (s *Service) Resume(ctx context.Context, workspaceID string) (bool, error) {
	now := s.clock.Now().UTC()
	var changed bool
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		changed, err = dropHold(ctx, tx, workspaceID, KindWorkspacePaused, "")
		if err != nil || !changed {
			return err
		}
		// The rates start afresh: the bounces and complaints that paused it
		// would pause it again at the next one.
		if err := forgetOutcomes(ctx, tx, workspaceID); err != nil {
			return err
		}
		_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: workspaceID, Type: events.WorkspaceResumed, CreatedAt: now,
			Data: map[string]any{"workspace_id": workspaceID, "reason": "released by the operator", "resumed_at": now.Format(time.RFC3339)}})
		return err
	})
	if err != nil {
		return false, err
	}
	return changed, s.Refresh(ctx)
}

// Address states SetAddressState accepts.
const (
	StateActive      = "active"
	StatePaused      = "paused"
	StateReceiveOnly = "receive_only"
)

// SetAddressState pauses a sending address, makes it receive-only, or
// makes it active again (the operator's `mailroom address set`).
func (s *Service) SetAddressState(ctx context.Context, workspaceID, address, state string) error {
	address = strings.ToLower(strings.TrimSpace(address))
	if at := strings.LastIndexByte(address, '@'); at < 1 || at == len(address)-1 {
		return fmt.Errorf("%q is not an email address", address)
	}
	now := s.clock.Now().UTC()
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		for _, k := range []string{KindAddressPaused, KindAddressReceiveOnly} {
			if _, err := dropHold(ctx, tx, workspaceID, k, address); err != nil {
				return err
			}
		}
		switch state {
		case StateActive:
			return nil
		case StatePaused:
			_, err := putHold(ctx, tx, Hold{WorkspaceID: workspaceID, Kind: KindAddressPaused, Value: address, CreatedAt: now})
			return err
		case StateReceiveOnly:
			_, err := putHold(ctx, tx, Hold{WorkspaceID: workspaceID, Kind: KindAddressReceiveOnly, Value: address, CreatedAt: now})
			return err
		}
		return fmt.Errorf("state %q is not active, paused or receive_only", state)
	})
	if err != nil {
		return err
	}
	return s.Refresh(ctx)
}

// BlockDomain adds (block true) or removes a recipient domain from the
// workspace's blocked list (recipient_blocked_by_policy).
func (s *Service) BlockDomain(ctx context.Context, workspaceID, domain string, block bool) error {
	domain = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(domain), "@")))
	if domain == "" || strings.ContainsAny(domain, "@ /") || !strings.Contains(domain, ".") {
		return fmt.Errorf("%q is not a domain", domain)
	}
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		if block {
			_, err := putHold(ctx, tx, Hold{WorkspaceID: workspaceID, Kind: KindBlockedDomain, Value: domain, CreatedAt: s.clock.Now().UTC()})
			return err
		}
		_, err := dropHold(ctx, tx, workspaceID, KindBlockedDomain, domain)
		return err
	})
	if err != nil {
		return err
	}
	return s.Refresh(ctx)
}

// evaluate applies the reputation rule to one workspace: over its real
// sends of the last 7 UTC days (today included), at least PauseMinSends of
// them, a bounce or complaint rate at or above its threshold pauses it.
func (s *Service) evaluate(ctx context.Context, ws string, now time.Time) error {
	if s.Paused(ws) {
		return nil
	}
	periods := make([]string, 7)
	for i := range periods {
		periods[i] = dayKey(now.AddDate(0, 0, -i))
	}
	c, err := sumCounters(ctx, s.db, ws, periods)
	if err != nil {
		return err
	}
	if c.sends < int64(max(s.set.PauseMinSends, 1)) {
		return nil
	}
	br, cr := float64(c.bounces)/float64(c.sends), float64(c.complaints)/float64(c.sends)
	var reason string
	switch {
	case s.set.PauseComplaintRate > 0 && cr >= s.set.PauseComplaintRate:
		reason = fmt.Sprintf("complaint rate %.2f%% over the last 7 days (threshold %.2f%%)", cr*100, s.set.PauseComplaintRate*100)
	case s.set.PauseBounceRate > 0 && br >= s.set.PauseBounceRate:
		reason = fmt.Sprintf("bounce rate %.2f%% over the last 7 days (threshold %.2f%%)", br*100, s.set.PauseBounceRate*100)
	default:
		return nil
	}
	_, err = s.Pause(ctx, ws, reason, map[string]any{
		"sends": c.sends, "bounces": c.bounces, "complaints": c.complaints,
		"bounce_rate": ratio(c.bounces, c.sends), "complaint_rate": ratio(c.complaints, c.sends),
	})
	if err == nil {
		s.log.Warn("workspace paused", "workspace_id", ws, "reason", reason)
	}
	return err
}
