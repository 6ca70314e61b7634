package tracking

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"mailroom/internal/store"
)

// All of the tracking area's SQL (table email_tracking).

var bookColumns = []string{"email_id", "workspace_id", "flags", "domain", "mail_class", "template_id", "tags", "created_at"}

// Booking is a tracked email as the sending area accepts it.
type Booking struct {
	WorkspaceID, EmailID string
	Flags                int
	Domain               string // the sending domain
	MailClass            string
	TemplateID           string
	Tags                 map[string]string
	At                   time.Time
}

// Book records, inside the accepting transaction, that an email is
// tracked (its row rides in the commit's multi-row insert). A send without
// tracking books nothing and costs nothing.
func Book(tx *store.Tx, b Booking) {
	if b.Flags&(TrackOpens|TrackClicks) == 0 {
		return
	}
	tx.DeferInsert("email_tracking", bookColumns, b.args()...)
}

// args are the booking's values in bookColumns' order.
func (b Booking) args() []any {
	tags := "{}"
	if len(b.Tags) > 0 {
		if j, err := json.Marshal(b.Tags); err == nil {
			tags = string(j)
		}
	}
	class := b.MailClass
	if class == "" {
		class = "transactional"
	}
	return []any{b.EmailID, b.WorkspaceID, b.Flags, strings.ToLower(b.Domain), class, b.TemplateID, tags, store.Millis(b.At)}
}

// bookLate writes the row of an email booked late (Config.Booking): at
// its first recorded open or click, inside the recorder's transaction. A
// row another node's flush wrote first is kept.
func bookLate(ctx context.Context, tx *store.Tx, b Booking) error {
	_, err := tx.Exec(ctx, `INSERT INTO email_tracking (email_id, workspace_id, flags, domain, mail_class, template_id, tags, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (email_id) DO NOTHING`, b.args()...)
	return err
}

// FlagsSQL is a scalar subquery for a query over the emails table
// (aliased e): the flags of the email's tracking row, NULL when it has
// none (untracked, or booked late: Config.Booking). The deliver job folds
// it into the read it makes anyway.
const FlagsSQL = `(SELECT t.flags FROM email_tracking t WHERE t.email_id = e.id)`

type trackedRow struct {
	flags                     int
	opens, clicks             int64
	domain, class, templateID string
	tags                      string
}

// bump adds d to an email's tracking row and returns the row after it.
func bump(ctx context.Context, tx *store.Tx, ws, id string, d delta) (trackedRow, error) {
	var r trackedRow
	err := tx.QueryRow(ctx, `UPDATE email_tracking SET opens = opens + ?, clicks = clicks + ?,
		machine_opens = machine_opens + ?, machine_clicks = machine_clicks + ?
		WHERE workspace_id = ? AND email_id = ? RETURNING flags, opens, clicks, domain, mail_class, template_id, tags`,
		d.opens, d.clicks, d.machineOpens, d.machineClicks, ws, id).
		Scan(&r.flags, &r.opens, &r.clicks, &r.domain, &r.class, &r.templateID, &r.tags)
	return r, err
}

// maxStoredURL bounds a stored link (its token was signed by this node,
// so it is a URL from a message; a longer one is kept cut).
const maxStoredURL = 2048

// addLinkClicks adds an email's clicks per URL.
func addLinkClicks(ctx context.Context, tx *store.Tx, ws, id string, links map[string]*[2]int64) error {
	for _, u := range slices.Sorted(maps.Keys(links)) { // one order: concurrent flushes never deadlock
		n := links[u]
		if len(u) > maxStoredURL {
			u = u[:maxStoredURL]
		}
		if _, err := tx.Exec(ctx, `INSERT INTO link_clicks (email_id, url, workspace_id, clicks, machine_clicks) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (email_id, url) DO UPDATE SET clicks = link_clicks.clicks + excluded.clicks,
			machine_clicks = link_clicks.machine_clicks + excluded.machine_clicks`, id, u, ws, n[0], n[1]); err != nil {
			return err
		}
	}
	return nil
}

// ClickedLink is one URL of a broadcast with its clicks by people.
type ClickedLink struct {
	URL                  string
	Clicks, UniqueClicks int64
}

// ClickedLinks lists the URLs people clicked in the emails tagged
// broadcast_id = broadcastID, most clicked first (machine clicks — link
// scanners, previews — are not counted).
func (s *Service) ClickedLinks(ctx context.Context, ws, broadcastID string, limit, offset int) ([]ClickedLink, error) {
	tag := s.cfg.DB.JSONText("t.tags", "broadcast_id")
	args := append([]any{ws}, tag.Args...)
	args = append(args, broadcastID, limit, offset)
	return store.QueryAll(ctx, s.cfg.DB, func(sc store.Scanner) (ClickedLink, error) {
		var c ClickedLink
		return c, sc.Scan(&c.URL, &c.Clicks, &c.UniqueClicks)
	}, `SELECT l.url, SUM(l.clicks), COUNT(*) FROM link_clicks l JOIN email_tracking t ON t.email_id = l.email_id
		WHERE t.workspace_id = ? AND `+tag.SQL+` = ? AND l.clicks > 0
		GROUP BY l.url ORDER BY SUM(l.clicks) DESC, l.url LIMIT ? OFFSET ?`, args...)
}

// Machine are an email's machine opens and clicks.
type Machine struct{ Opens, Clicks int64 }

// MachineCounts reads an email's machine counters (zero when untracked).
func MachineCounts(ctx context.Context, db store.Querier, ws, id string) (Machine, error) {
	var m Machine
	err := db.QueryRow(ctx, `SELECT machine_opens, machine_clicks FROM email_tracking WHERE workspace_id = ? AND email_id = ?`, ws, id).
		Scan(&m.Opens, &m.Clicks)
	if errors.Is(err, store.ErrNotFound) {
		return Machine{}, nil
	}
	return m, err
}

// Engagement is the opens and clicks of a set of emails: human ones (all,
// and the emails opened or clicked at least once) and machine ones apart.
type Engagement struct {
	Opens, UniqueOpens, Clicks, UniqueClicks int64
	MachineOpens, MachineClicks              int64
}

// EngagementOf sums the counters of the workspace's emails whose ids the
// query emailIDs (the caller's SQL over its own table, with args) selects.
// Untracked emails have no row and add nothing.
func EngagementOf(ctx context.Context, db store.Querier, ws, emailIDs string, args ...any) (Engagement, error) {
	var e Engagement
	err := db.QueryRow(ctx, `SELECT CAST(COALESCE(SUM(opens), 0) AS BIGINT), COUNT(CASE WHEN opens > 0 THEN 1 END),
		CAST(COALESCE(SUM(clicks), 0) AS BIGINT), COUNT(CASE WHEN clicks > 0 THEN 1 END),
		CAST(COALESCE(SUM(machine_opens), 0) AS BIGINT), CAST(COALESCE(SUM(machine_clicks), 0) AS BIGINT)
		FROM email_tracking WHERE workspace_id = ? AND email_id IN (`+emailIDs+`)`, append([]any{ws}, args...)...).
		Scan(&e.Opens, &e.UniqueOpens, &e.Clicks, &e.UniqueClicks, &e.MachineOpens, &e.MachineClicks)
	return e, err
}

// flagsOf reads an email's tracking flags, 0 when it is not tracked: its
// row's, or when it has none those it would be booked with late.
func (s *Service) flagsOf(ctx context.Context, q store.Querier, ws, id string) (int, error) {
	var f int
	err := q.QueryRow(ctx, `SELECT flags FROM email_tracking WHERE workspace_id = ? AND email_id = ?`, ws, id).Scan(&f)
	if !errors.Is(err, store.ErrNotFound) {
		return f, err
	}
	if s.cfg.Booking == nil {
		return 0, nil
	}
	b, ok, err := s.cfg.Booking(ctx, q, ws, id)
	if err != nil || !ok {
		return 0, err
	}
	return b.Flags, nil
}
