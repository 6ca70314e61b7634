package inbound

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"mailroom/internal/store"
)

// All the inbound area's SQL: mailboxes, inbound_provisioned, messages,
// message_parts, message_raw, threads, message_bookings and the search
// index.

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

// mailboxAddresses reads the mailboxes of the workspaces among ws: id and
// address, by workspace.
func mailboxAddresses(ctx context.Context, q store.Querier, ws []string) (map[string][][2]string, error) {
	out := map[string][][2]string{}
	args, in := store.PaddedIn(nil, ws)
	rows, err := q.Query(ctx, `SELECT workspace_id, id, address FROM mailboxes WHERE workspace_id IN (`+in+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var w, id, addr string
		if err := rows.Scan(&w, &id, &addr); err != nil {
			return nil, err
		}
		out[w] = append(out[w], [2]string{id, addr})
	}
	return out, rows.Err()
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
		`DELETE FROM message_bookings WHERE workspace_id = ? AND mailbox_id = ?`,
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

// partMeta is what messages.attachments and inline_images hold per part.
type partMeta struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	ContentID   string `json:"content_id,omitempty"`
	Size        int    `json:"size"`
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// messageRow is a messages row's values, the thread's left for
// insertMessage: made before the transaction, its JSON and search columns
// cost the single writer nothing (issue #47).
type messageRow []any

// rowThread is thread_id's place in a messageRow.
const rowThread = 3

func newMessageRow(m *Message) messageRow {
	var atts, inl []partMeta
	for _, p := range m.Parts {
		pm := partMeta{Filename: p.Filename, ContentType: p.ContentType, ContentID: p.ContentID, Size: p.Size}
		if p.Inline {
			inl = append(inl, pm)
		} else {
			atts = append(atts, pm)
		}
	}
	if atts == nil {
		atts = []partMeta{}
	}
	if inl == nil {
		inl = []partMeta{}
	}
	return messageRow{m.ID, m.WorkspaceID, m.MailboxID, nil, m.Direction, m.MailFrom, m.From, store.TextOrNull(m.FromName),
		jsonText(m.To), jsonText(m.Cc), m.Subject, m.Snippet, store.OrNull(m.Text), store.OrNull(m.HTML), store.TextOrNull(m.Date),
		store.TextOrNull(m.MessageID), store.TextOrNull(m.InReplyTo), jsonText(m.References), store.TextOrNull(m.ListID),
		jsonText(m.Headers), m.SpamVerdict, jsonText(m.Auth), store.BoolInt(m.Automated), jsonText(atts), jsonText(inl),
		store.BoolInt(m.Unread), store.BoolInt(m.Archived), m.Size, store.TextOrNull(m.EmailID), store.Millis(m.ReceivedAt),
		storedSearchBody(m), searchPeople(m)}
}

// insertMessage writes the message (row: its values, made by
// newMessageRow; nil makes them now) with its raw copy (received mail,
// whose attachments are read back out of it) or, without one (a sent
// copy), with its parts.
func insertMessage(ctx context.Context, tx *store.Tx, m *Message, row messageRow, raw *rawCopy) error {
	if row == nil {
		row = newMessageRow(m)
	}
	row[rowThread] = m.ThreadID
	_, err := tx.Exec(ctx, `INSERT INTO messages (id, workspace_id, mailbox_id, thread_id, direction, mail_from, from_addr, from_name,
		to_addrs, cc_addrs, subject, snippet, text_body, html_body, date_header, message_id_header, in_reply_to, refs, list_id,
		headers, spam_verdict, auth, automated, attachments, inline_images, unread, archived, size, email_id, received_at,
		search_body, search_people)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, row...)
	if err != nil {
		return err
	}
	indexLater(tx, m.ID)
	if raw != nil {
		_, err := tx.Exec(ctx, `INSERT INTO message_raw (message_id, data, text_at, html_at) VALUES (?, ?, ?, ?)`,
			m.ID, raw.data, cutAt(raw.textAt), cutAt(raw.htmlAt))
		return err
	}
	for _, p := range m.Parts {
		data := p.Data
		if data == nil {
			data = []byte{}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO message_parts (message_id, filename, content_type, data) VALUES (?, ?, ?, ?)`,
			m.ID, p.Filename, p.ContentType, data); err != nil {
			return err
		}
	}
	return nil
}

// indexLater queues message id for SQLite's full-text index, written for
// the whole transaction by one statement before it commits (00127):
// FTS5 writes its pending entries out as a new segment at every statement
// savepoint and before a lower rowid, so a trigger per message made a
// segment, and later merges, per message. PostgreSQL indexes a generated
// column.
func indexLater(tx *store.Tx, id string) {
	if tx.Dialect() != store.SQLite {
		return
	}
	q := tx.Local(searchQueueKey{}, func() any {
		q := &searchQueue{}
		tx.BeforeFlush(q.write)
		return q
	}).(*searchQueue)
	q.ids = append(q.ids, id)
}

type searchQueueKey struct{}

// searchQueue holds the ids of the messages a transaction inserted. One
// rolled back (to a savepoint) stays queued and is simply not found.
type searchQueue struct{ ids []string }

// searchIndexChunk bounds one statement's IN list.
const searchIndexChunk = 256

func (q *searchQueue) write(ctx context.Context, tx *store.Tx) error {
	for ids := range slices.Chunk(q.ids, searchIndexChunk) {
		args, in := store.PaddedIn(nil, ids)
		if _, err := tx.Exec(ctx, `INSERT INTO messages_search (rowid, subject, search_people, search_body)
			SELECT rowid, subject, search_people, CASE WHEN search_body = '' THEN COALESCE(text_body, '') ELSE search_body END
			FROM messages WHERE id IN (`+in+`) ORDER BY rowid`, args...); err != nil { // FTS5 flushes at a lower rowid
			return err
		}
	}
	q.ids = nil
	return nil
}

// threadByMessageIDs finds the thread of the newest message of the mailbox
// whose Message-ID is one of chain.
func threadByMessageIDs(ctx context.Context, tx *store.Tx, workspaceID, mailboxID string, chain []string) (string, error) {
	if len(chain) == 0 {
		return "", store.ErrNotFound
	}
	if len(chain) > 100 {
		chain = chain[len(chain)-100:]
	}
	args, in := store.PaddedIn([]any{workspaceID, mailboxID}, chain)
	var id string
	err := tx.QueryRow(ctx, `SELECT thread_id FROM messages WHERE workspace_id = ? AND mailbox_id = ? AND message_id_header IN (`+in+`)
		ORDER BY received_at DESC LIMIT 1`, args...).Scan(&id)
	return id, err
}

func threadBySubject(ctx context.Context, tx *store.Tx, mailboxID, key string, since time.Time) (string, error) {
	var id string
	err := tx.QueryRow(ctx, `SELECT id FROM threads WHERE mailbox_id = ? AND subject_key = ? AND last_message_at >= ?
		ORDER BY last_message_at DESC LIMIT 1`, mailboxID, key, store.Millis(since)).Scan(&id)
	return id, err
}

func insertThread(ctx context.Context, tx *store.Tx, m *Message, key string) error {
	_, err := tx.Exec(ctx, `INSERT INTO threads (id, workspace_id, mailbox_id, subject, subject_key, message_count, last_message_at, created_at)
		VALUES (?, ?, ?, ?, ?, 1, ?, ?)`, m.ThreadID, m.WorkspaceID, m.MailboxID, m.Subject, key, store.Millis(m.ReceivedAt), store.Millis(m.ReceivedAt))
	return err
}

// touchThread counts a new message into thread id; false when it is gone.
func touchThread(ctx context.Context, tx *store.Tx, id string, at time.Time) (bool, error) {
	return store.Changed(tx.Exec(ctx, `UPDATE threads SET message_count = message_count + 1,
		last_message_at = CASE WHEN last_message_at > ? THEN last_message_at ELSE ? END WHERE id = ?`, store.Millis(at), store.Millis(at), id))
}

const messageCols = `m.id, m.workspace_id, m.mailbox_id, COALESCE(b.address, ''), m.thread_id, m.direction, m.mail_from, m.from_addr,
	COALESCE(m.from_name, ''), m.to_addrs, m.cc_addrs, m.subject, m.snippet, m.text_body, m.html_body, COALESCE(m.date_header, ''),
	COALESCE(m.message_id_header, ''), COALESCE(m.in_reply_to, ''), m.refs, COALESCE(m.list_id, ''), m.headers, m.spam_verdict,
	m.auth, m.automated, m.attachments, m.inline_images, m.unread, m.archived, m.size, COALESCE(m.email_id, ''), m.received_at`

const messageFrom = ` FROM messages m LEFT JOIN mailboxes b ON b.id = m.mailbox_id`

func scanMessage(r store.Scanner) (*Message, error) {
	m := &Message{}
	var to, cc, refs, headers, auth, atts, inl string
	var text, html *string
	var automated, unread, archived int
	var at int64
	if err := r.Scan(&m.ID, &m.WorkspaceID, &m.MailboxID, &m.Mailbox, &m.ThreadID, &m.Direction, &m.MailFrom, &m.From,
		&m.FromName, &to, &cc, &m.Subject, &m.Snippet, &text, &html, &m.Date, &m.MessageID, &m.InReplyTo, &refs, &m.ListID,
		&headers, &m.SpamVerdict, &auth, &automated, &atts, &inl, &unread, &archived, &m.Size, &m.EmailID, &at); err != nil {
		return nil, err
	}
	m.Text, m.HTML = text, html
	m.Automated, m.Unread, m.Archived = automated == 1, unread == 1, archived == 1
	m.ReceivedAt = store.FromMillis(at)
	for _, f := range []struct {
		src string
		dst any
	}{{to, &m.To}, {cc, &m.Cc}, {refs, &m.References}, {headers, &m.Headers}, {auth, &m.Auth}} {
		if err := json.Unmarshal([]byte(f.src), f.dst); err != nil {
			return nil, err
		}
	}
	var a, in []partMeta
	if err := json.Unmarshal([]byte(atts), &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(inl), &in); err != nil {
		return nil, err
	}
	for _, p := range a {
		m.Parts = append(m.Parts, Part{Filename: p.Filename, ContentType: p.ContentType, ContentID: p.ContentID, Size: p.Size})
	}
	for _, p := range in {
		m.Parts = append(m.Parts, Part{Filename: p.Filename, ContentType: p.ContentType, ContentID: p.ContentID, Size: p.Size, Inline: true})
	}
	return m, nil
}

// scope is the part of a WHERE that keeps a read to the workspace and,
// for a bound key or a mailbox_id filter, to one mailbox.
func scope(alias, workspaceID, mailboxID string) (string, []any) {
	if mailboxID != "" {
		return alias + `.workspace_id = ? AND ` + alias + `.mailbox_id = ?`, []any{workspaceID, mailboxID}
	}
	return alias + `.workspace_id = ?`, []any{workspaceID}
}

func getMessage(ctx context.Context, q store.Querier, workspaceID, mailboxID, id string) (*Message, error) {
	where, args := scope("m", workspaceID, mailboxID)
	return scanMessage(q.QueryRow(ctx, `SELECT `+messageCols+messageFrom+` WHERE `+where+` AND m.id = ?`, append(args, id)...))
}

// MessageFilter narrows GET /v1/messages.
type MessageFilter struct {
	MailboxID       string // a bound key's mailbox or the caller's mailbox_id
	ThreadID        string
	UnreadOnly      bool
	IncludeArchived bool
	Before          *Position // the cursor: rows strictly older
	Limit           int
}

// Position is a place in a newest-first list.
type Position struct {
	At int64
	ID string
}

func listMessages(ctx context.Context, q store.Querier, workspaceID string, f MessageFilter) ([]*Message, error) {
	where, args := scope("m", workspaceID, f.MailboxID)
	if f.ThreadID != "" {
		where += ` AND m.thread_id = ?`
		args = append(args, f.ThreadID)
	}
	if f.UnreadOnly {
		where += ` AND m.unread = 1`
	}
	if !f.IncludeArchived {
		where += ` AND m.archived = 0`
	}
	if f.Before != nil {
		where += ` AND (m.received_at < ? OR (m.received_at = ? AND m.id < ?))`
		args = append(args, f.Before.At, f.Before.At, f.Before.ID)
	}
	args = append(args, f.Limit)
	return store.QueryAll(ctx, q, scanMessage, `SELECT `+messageCols+messageFrom+` WHERE `+where+` ORDER BY m.received_at DESC, m.id DESC LIMIT ?`, args...)
}

func threadMessages(ctx context.Context, q store.Querier, workspaceID, mailboxID, threadID string) ([]*Message, error) {
	where, args := scope("m", workspaceID, mailboxID)
	return store.QueryAll(ctx, q, scanMessage, `SELECT `+messageCols+messageFrom+` WHERE `+where+` AND m.thread_id = ? ORDER BY m.received_at, m.id`, append(args, threadID)...)
}

func setFlags(ctx context.Context, q store.Querier, workspaceID, mailboxID, id string, unread, archived *bool) error {
	where, args := scope("messages", workspaceID, mailboxID)
	set, sargs := []string{}, []any{}
	if unread != nil {
		set, sargs = append(set, `unread = ?`), append(sargs, store.BoolInt(*unread))
	}
	if archived != nil {
		set, sargs = append(set, `archived = ?`), append(sargs, store.BoolInt(*archived))
	}
	if len(set) == 0 {
		set = append(set, `unread = unread`)
	}
	res, err := q.Exec(ctx, `UPDATE messages SET `+strings.Join(set, ", ")+` WHERE `+where+` AND id = ?`, append(append(sargs, args...), id)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	return nil
}

func attachment(ctx context.Context, q store.Querier, workspaceID, mailboxID, id, filename string) (string, []byte, error) {
	where, args := scope("m", workspaceID, mailboxID)
	var ct string
	var data []byte
	err := q.QueryRow(ctx, `SELECT p.content_type, p.data FROM message_parts p JOIN messages m ON m.id = p.message_id
		WHERE `+where+` AND m.id = ? AND p.filename = ?`, append(args, id, filename)...).Scan(&ct, &data)
	return ct, data, err
}

// cutAt is a rawCopy offset as message_raw keeps it: NULL for none.
func cutAt(at int) any {
	if at < 0 {
		return nil
	}
	return at
}

// rawMessage reads the raw copy with the text and html bodies put back
// where they were cut out (text_at, html_at; see rawCopy).
func rawMessage(ctx context.Context, q store.Querier, workspaceID, mailboxID, id string) ([]byte, error) {
	where, args := scope("m", workspaceID, mailboxID)
	var data []byte
	var textAt, htmlAt sql.NullInt64
	var text, html *string
	err := q.QueryRow(ctx, `SELECT r.data, r.text_at, r.html_at, CASE WHEN r.text_at IS NULL THEN NULL ELSE m.text_body END,
		CASE WHEN r.html_at IS NULL THEN NULL ELSE m.html_body END
		FROM message_raw r JOIN messages m ON m.id = r.message_id WHERE `+where+` AND m.id = ?`, append(args, id)...).Scan(&data, &textAt, &htmlAt, &text, &html)
	if err != nil || !textAt.Valid && !htmlAt.Valid {
		return data, err
	}
	at := func(n sql.NullInt64) int {
		if !n.Valid {
			return -1
		}
		return int(n.Int64)
	}
	return restoreBodies(data, at(textAt), at(htmlAt), text, html)
}

// Thread is a conversation as lists show it.
type Thread struct {
	ID            string
	MailboxID     string
	Subject       string
	MessageCount  int
	LastMessageAt time.Time
	CreatedAt     time.Time
}

func scanThread(r store.Scanner) (Thread, error) {
	var t Thread
	var last, created int64
	err := r.Scan(&t.ID, &t.MailboxID, &t.Subject, &t.MessageCount, &last, &created)
	t.LastMessageAt, t.CreatedAt = store.FromMillis(last), store.FromMillis(created)
	return t, err
}

func listThreads(ctx context.Context, q store.Querier, workspaceID, mailboxID string, before *Position, limit int) ([]Thread, error) {
	where, args := scope("t", workspaceID, mailboxID)
	if before != nil {
		where += ` AND (t.last_message_at < ? OR (t.last_message_at = ? AND t.id < ?))`
		args = append(args, before.At, before.At, before.ID)
	}
	return store.QueryAll(ctx, q, scanThread, `SELECT t.id, t.mailbox_id, t.subject, t.message_count, t.last_message_at, t.created_at FROM threads t
		WHERE `+where+` ORDER BY t.last_message_at DESC, t.id DESC LIMIT ?`, append(args, limit)...)
}

func getThread(ctx context.Context, q store.Querier, workspaceID, mailboxID, id string) (Thread, error) {
	where, args := scope("t", workspaceID, mailboxID)
	return scanThread(q.QueryRow(ctx, `SELECT t.id, t.mailbox_id, t.subject, t.message_count, t.last_message_at, t.created_at FROM threads t
		WHERE `+where+` AND t.id = ?`, append(args, id)...))
}

// messageIndex is the full-text index of messages (migrations 00049,
// 00050, 00103): search_body is ” where it would repeat text_body.
var messageIndex = store.TextIndex{Table: "messages", Key: "id", Columns: []string{"subject", "search_people", "search_body"},
	Excerpt: "CASE WHEN search_body = '' THEN text_body ELSE search_body END"}

// searchMessages is GET /v1/search: the messages of the workspace (of one
// mailbox when mailboxID is set) holding every word of q, best first.
func searchMessages(ctx context.Context, db *store.DB, workspaceID, mailboxID, q string, limit int) ([]Hit, error) {
	where, args := scope("t", workspaceID, mailboxID)
	e, ok, err := db.TextSearch(ctx, messageIndex, `t.id, t.thread_id, COALESCE((SELECT b.address FROM mailboxes b WHERE b.id = t.mailbox_id), ''),
		t.direction, t.from_addr, COALESCE(t.from_name, ''), t.subject, t.unread, t.archived, t.received_at`,
		store.Expr{SQL: where, Args: args}, q, "t.received_at DESC, t.id DESC", limit)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []Hit{}, nil
	}
	hits, err := store.QueryAll(ctx, textQuerier{db}, func(r store.Scanner) (Hit, error) {
		var h Hit
		var unread, archived int
		var at int64
		err := r.Scan(&h.MessageID, &h.ThreadID, &h.Mailbox, &h.Direction, &h.From, &h.FromName, &h.Subject, &unread, &archived, &at, &h.Score, &h.Excerpt)
		h.Unread, h.Archived, h.ReceivedAt = unread == 1, archived == 1, store.FromMillis(at)
		return h, err
	}, e.SQL, e.Args...)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, h := range hits {
		if h.Excerpt == "" {
			keys = append(keys, h.MessageID)
		}
	}
	ex, err := db.TextExcerpts(ctx, messageIndex, q, keys)
	if err != nil {
		return nil, err
	}
	for i := range hits {
		if e, ok := ex[hits[i].MessageID]; ok {
			hits[i].Excerpt = e
		}
	}
	return hits, nil
}

// textQuerier runs the search's query as store.DB.TextQuery says.
type textQuerier struct{ *store.DB }

func (q textQuerier) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return q.TextQuery(ctx, store.Expr{SQL: query, Args: args})
}

// booking is a receive-side scheduled send (message_bookings).
type booking struct {
	EmailID   string
	MailboxID string
	ThreadID  string // the conversation it answers; "" for a new one
	Status    string
	SendAt    time.Time
	Copy      *Message // the sent copy to store when it goes
	MessageID string   // the stored copy, once it went
	CreatedAt time.Time
}

func insertBooking(ctx context.Context, tx *store.Tx, m *Message, threadID string, sendAt, now time.Time) error {
	cp, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO message_bookings (email_id, workspace_id, mailbox_id, thread_id, status, send_at, sent_copy, created_at)
		VALUES (?, ?, ?, ?, 'scheduled', ?, ?, ?)`, m.EmailID, m.WorkspaceID, m.MailboxID, threadID, store.Millis(sendAt), string(cp), store.Millis(now))
	return err
}

const bookingCols = `b.email_id, b.mailbox_id, b.thread_id, b.status, b.send_at, b.sent_copy, COALESCE(b.message_id, ''), b.created_at`

func scanBooking(r store.Scanner) (*booking, error) {
	b := &booking{}
	var cp string
	var at, created int64
	if err := r.Scan(&b.EmailID, &b.MailboxID, &b.ThreadID, &b.Status, &at, &cp, &b.MessageID, &created); err != nil {
		return nil, err
	}
	b.SendAt, b.CreatedAt = store.FromMillis(at), store.FromMillis(created)
	b.Copy = &Message{}
	return b, json.Unmarshal([]byte(cp), b.Copy)
}

// getBooking reads the booking of email id, kept to the workspace (and the
// mailbox when mailboxID is set).
func getBooking(ctx context.Context, q store.Querier, workspaceID, mailboxID, id string) (*booking, error) {
	where, args := scope("b", workspaceID, mailboxID)
	return scanBooking(q.QueryRow(ctx, `SELECT `+bookingCols+` FROM message_bookings b WHERE `+where+` AND b.email_id = ?`, append(args, id)...))
}

// listBookings lists the bookings still waiting, soonest first, after the
// position after (ascending) when it is set.
func listBookings(ctx context.Context, q store.Querier, workspaceID, mailboxID string, after *Position, limit int) ([]*booking, error) {
	where, args := scope("b", workspaceID, mailboxID)
	if after != nil {
		where += ` AND (b.send_at > ? OR (b.send_at = ? AND b.email_id > ?))`
		args = append(args, after.At, after.At, after.ID)
	}
	return store.QueryAll(ctx, q, scanBooking, `SELECT `+bookingCols+` FROM message_bookings b WHERE `+where+` AND b.status = 'scheduled'
		ORDER BY b.send_at, b.email_id LIMIT ?`, append(args, limit)...)
}

// bookingFor reads the booking of email id whatever its workspace: the
// sending service's changes name the email only.
func bookingFor(ctx context.Context, tx *store.Tx, id string) (*booking, error) {
	return scanBooking(tx.QueryRow(ctx, `SELECT `+bookingCols+` FROM message_bookings b WHERE b.email_id = ?`, id))
}

func updateBooking(ctx context.Context, tx *store.Tx, id, status string, sendAt time.Time, messageID string) error {
	_, err := tx.Exec(ctx, `UPDATE message_bookings SET status = ?, send_at = ?, message_id = ? WHERE email_id = ?`,
		status, store.Millis(sendAt), store.TextOrNull(messageID), id)
	return err
}

// PurgeRaw deletes the raw source of up to limit messages received before
// before, and with it their attachments (read from the raw copy) and the
// wrapped forward; the message's headers, text and html stay.
func PurgeRaw(ctx context.Context, db *store.DB, before time.Time, limit int) (int64, error) {
	ids, err := db.Column(ctx, `SELECT r.message_id FROM message_raw r JOIN messages m ON m.id = r.message_id
		WHERE m.received_at < ? LIMIT ?`, store.Millis(before), limit)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	res, err := db.Exec(ctx, `DELETE FROM message_raw WHERE message_id IN (`+store.Placeholders(len(ids))+`)`, ids...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// renameMailbox sets a mailbox's display name.
func renameMailbox(ctx context.Context, q store.Querier, workspaceID, id, name string) error {
	res, err := q.Exec(ctx, `UPDATE mailboxes SET name = ? WHERE workspace_id = ? AND id = ?`, name, workspaceID, id)
	if ok, err := store.Changed(res, err); err != nil {
		return err
	} else if !ok {
		return store.ErrNotFound
	}
	return nil
}

// deleteThread removes a conversation of the mailbox with its messages
// (their parts and raw copies); the search index follows the messages.
func deleteThread(ctx context.Context, tx *store.Tx, workspaceID, mailboxID, id string) error {
	res, err := tx.Exec(ctx, `DELETE FROM threads WHERE workspace_id = ? AND mailbox_id = ? AND id = ?`, workspaceID, mailboxID, id)
	if ok, err := store.Changed(res, err); err != nil {
		return err
	} else if !ok {
		return store.ErrNotFound
	}
	for _, q := range []string{
		`DELETE FROM message_parts WHERE message_id IN (SELECT id FROM messages WHERE workspace_id = ? AND mailbox_id = ? AND thread_id = ?)`,
		`DELETE FROM message_raw WHERE message_id IN (SELECT id FROM messages WHERE workspace_id = ? AND mailbox_id = ? AND thread_id = ?)`,
		`DELETE FROM messages WHERE workspace_id = ? AND mailbox_id = ? AND thread_id = ?`,
	} {
		if _, err := tx.Exec(ctx, q, workspaceID, mailboxID, id); err != nil {
			return err
		}
	}
	return nil
}

// lastReceived is when the mailbox last received a message (nil for never).
func lastReceived(ctx context.Context, q store.Querier, workspaceID, mailboxID string) (*time.Time, error) {
	var at sql.NullInt64
	if err := q.QueryRow(ctx, `SELECT MAX(received_at) FROM messages WHERE workspace_id = ? AND mailbox_id = ? AND direction = 'received'`,
		workspaceID, mailboxID).Scan(&at); err != nil || !at.Valid {
		return nil, err
	}
	t := store.FromMillis(at.Int64)
	return &t, nil
}

// messagesByID reads the messages among ids that exist, whatever their
// workspace: the event log that names them is already scoped.
func messagesByID(ctx context.Context, q store.Querier, ids []string) (map[string]*Message, error) {
	out := make(map[string]*Message, len(ids))
	for start := 0; start < len(ids); start += 500 {
		args, in := store.PaddedIn(nil, ids[start:min(start+500, len(ids))])
		ms, err := store.QueryAll(ctx, q, scanMessage, `SELECT `+messageCols+messageFrom+` WHERE m.id IN (`+in+`)`, args...)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			out[m.ID] = m
		}
	}
	return out, nil
}
