// Package suppressions is the list of addresses mail must not go to: rows
// per workspace (from a bounce, a complaint, an unsubscribe or by hand) and
// global rows that the operator adds for the whole service.
package suppressions

import (
	"context"
	"strings"
	"time"

	"mailroom/internal/store"
)

// Reasons the spec defines.
const (
	ReasonBounce    = "bounce"
	ReasonComplaint = "complaint"
	ReasonUnsub     = "unsub"
	ReasonManual    = "manual"
)

// ValidReason reports whether r is one of the spec's reasons.
func ValidReason(r string) bool {
	switch r {
	case ReasonBounce, ReasonComplaint, ReasonUnsub, ReasonManual:
		return true
	}
	return false
}

// globalWorkspace is the workspace_id of service-wide rows.
const globalWorkspace = ""

// Normalize is the stored form of an address: trimmed and lowercased, so a
// suppression matches however the caller spells the address.
func Normalize(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// AddTx records a suppression inside tx; an existing row for the address is
// kept as it is (the first reason wins). It returns the row id.
func AddTx(ctx context.Context, tx *store.Tx, workspaceID, email, reason, sourceEmailID string, now time.Time) (string, error) {
	id, _, err := addTx(ctx, tx, workspaceID, email, reason, sourceEmailID, now)
	return id, err
}

// AddGlobal records a service-wide suppression (operator command).
func AddGlobal(ctx context.Context, db *store.DB, email, reason string, now time.Time) (id, stored string, err error) {
	err = db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if id, err = AddTx(ctx, tx, globalWorkspace, email, reason, "", now); err != nil {
			return err
		}
		// An address already suppressed keeps its first reason; report
		// the row as it is.
		sp, err := byID(ctx, tx, id)
		stored = sp.Reason
		return err
	})
	return id, stored, err
}
