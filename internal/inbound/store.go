package inbound

import (
	"context"
	"encoding/json"
	"time"

	"mailroom/internal/store"
)

// All the inbound area's SQL: mailboxes, inbound_provisioned, messages,
// message_parts, message_raw, threads and the search index.

func markProvisioned(ctx context.Context, tx *store.Tx, workspaceID string, at time.Time) (bool, error) {
	res, err := tx.Exec(ctx, `INSERT INTO inbound_provisioned (workspace_id, created_at) VALUES (?, ?) ON CONFLICT (workspace_id) DO NOTHING`,
		workspaceID, store.Millis(at))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *Service) isProvisioned(ctx context.Context, workspaceID string) (bool, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM inbound_provisioned WHERE workspace_id = ?`, workspaceID).Scan(&n)
	return n > 0, err
}

func insertMailbox(ctx context.Context, tx *store.Tx, m *Mailbox) error {
	rules, err := json.Marshal(m.Rules)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO mailboxes (id, workspace_id, domain_id, address, name, rules, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.WorkspaceID, m.DomainID, m.Address, m.Name, string(rules), store.Millis(m.CreatedAt))
	return err
}

const mailboxCols = `m.id, m.workspace_id, m.domain_id, m.address, m.name, m.rules, m.created_at,
	(SELECT COUNT(*) FROM messages g WHERE g.mailbox_id = m.id AND g.unread = 1 AND g.archived = 0 AND g.direction = 'received')`

func scanMailbox(r store.Scanner) (Mailbox, error) {
	var m Mailbox
	var rules string
	var at int64
	if err := r.Scan(&m.ID, &m.WorkspaceID, &m.DomainID, &m.Address, &m.Name, &rules, &at, &m.UnreadCount); err != nil {
		return m, err
	}
	m.CreatedAt = store.FromMillis(at)
	m.Rules = []Rule{}
	if err := json.Unmarshal([]byte(rules), &m.Rules); err != nil {
		return m, err
	}
	return m, nil
}

// listMailboxes lists the workspace's mailboxes, or only the one with id
// when id is not "".
func listMailboxes(ctx context.Context, q store.Querier, workspaceID, id string) ([]Mailbox, error) {
	if id != "" {
		return store.QueryAll(ctx, q, scanMailbox, `SELECT `+mailboxCols+` FROM mailboxes m WHERE m.workspace_id = ? AND m.id = ?`, workspaceID, id)
	}
	return store.QueryAll(ctx, q, scanMailbox, `SELECT `+mailboxCols+` FROM mailboxes m WHERE m.workspace_id = ? ORDER BY m.created_at, m.id`, workspaceID)
}

func mailboxByAddress(ctx context.Context, q store.Querier, addr string) (*Mailbox, error) {
	m, err := scanMailbox(q.QueryRow(ctx, `SELECT m.id, m.workspace_id, m.domain_id, m.address, m.name, m.rules, m.created_at, 0 FROM mailboxes m WHERE m.address = ?`, addr))
	if err != nil {
		return nil, err
	}
	return &m, nil
}

func deleteMailbox(ctx context.Context, tx *store.Tx, workspaceID, id string) error {
	res, err := tx.Exec(ctx, `DELETE FROM mailboxes WHERE workspace_id = ? AND id = ?`, workspaceID, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	for _, q := range []string{
		`DELETE FROM message_parts WHERE message_id IN (SELECT id FROM messages WHERE workspace_id = ? AND mailbox_id = ?)`,
		`DELETE FROM message_raw WHERE message_id IN (SELECT id FROM messages WHERE workspace_id = ? AND mailbox_id = ?)`,
		`DELETE FROM messages WHERE workspace_id = ? AND mailbox_id = ?`,
		`DELETE FROM threads WHERE workspace_id = ? AND mailbox_id = ?`,
	} {
		if _, err := tx.Exec(ctx, q, workspaceID, id); err != nil {
			return err
		}
	}
	return nil
}

func countOnDomain(ctx context.Context, q store.Querier, workspaceID, domainID string) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM mailboxes WHERE workspace_id = ? AND domain_id = ?`, workspaceID, domainID).Scan(&n)
	return n, err
}

func setRules(ctx context.Context, tx *store.Tx, workspaceID, id string, rules []Rule) error {
	b, err := json.Marshal(rules)
	if err != nil {
		return err
	}
	res, err := tx.Exec(ctx, `UPDATE mailboxes SET rules = ? WHERE workspace_id = ? AND id = ?`, string(b), workspaceID, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	return nil
}
