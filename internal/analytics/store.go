package analytics

import (
	"context"
	"strings"

	"mailroom/internal/store"
)

// All of the analytics area's SQL. The upserts are the same clause on both
// dialects (ON CONFLICT DO UPDATE with excluded, which SQLite has had since
// 3.24), deferred into the transaction's multi-row statements.

const counterColumns = `sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks`

const counterUpdates = `sent = %[1]s.sent + excluded.sent, delivered = %[1]s.delivered + excluded.delivered,
	bounced = %[1]s.bounced + excluded.bounced, complained = %[1]s.complained + excluded.complained,
	opens = %[1]s.opens + excluded.opens, unique_opens = %[1]s.unique_opens + excluded.unique_opens,
	clicks = %[1]s.clicks + excluded.clicks, unique_clicks = %[1]s.unique_clicks + excluded.unique_clicks,
	machine_opens = %[1]s.machine_opens + excluded.machine_opens, machine_clicks = %[1]s.machine_clicks + excluded.machine_clicks`

func updates(table string) string { return strings.ReplaceAll(counterUpdates, "%[1]s", table) }

var (
	cellColumns  = strings.Split(`workspace_id, tag_key, day, tag_value, domain, mail_class, template_id, `+counterColumns, ", ")
	cellConflict = ` ON CONFLICT (workspace_id, tag_key, day, tag_value, domain, mail_class, template_id) DO UPDATE SET ` + updates("analytics_cells")
	dayColumns   = strings.Split(`workspace_id, tag_key, day, tag_value, `+counterColumns, ", ")
	dayConflict  = ` ON CONFLICT (workspace_id, tag_key, day, tag_value) DO UPDATE SET ` + updates("analytics_days")
)

func deferCell(tx *store.Tx, k cellKey, c Counts) {
	tx.DeferUpsert("analytics_cells", cellColumns, cellConflict, k.ws, k.key, k.day, k.value, k.domain, k.class, k.templateID,
		c.Sent, c.Delivered, c.Bounced, c.Complained, c.Opens, c.UniqueOpens, c.Clicks, c.UniqueClicks, c.MachineOpens, c.MachineClicks)
}

func deferDay(tx *store.Tx, k cellKey, c Counts) {
	tx.DeferUpsert("analytics_days", dayColumns, dayConflict, k.ws, k.key, k.day, k.value,
		c.Sent, c.Delivered, c.Bounced, c.Complained, c.Opens, c.UniqueOpens, c.Clicks, c.UniqueClicks, c.MachineOpens, c.MachineClicks)
}

// sums are the counter columns summed (CAST: PostgreSQL's SUM of a bigint
// is numeric).
const sums = `CAST(SUM(sent) AS BIGINT), CAST(SUM(delivered) AS BIGINT), CAST(SUM(bounced) AS BIGINT), CAST(SUM(complained) AS BIGINT),
	CAST(SUM(opens) AS BIGINT), CAST(SUM(unique_opens) AS BIGINT), CAST(SUM(clicks) AS BIGINT), CAST(SUM(unique_clicks) AS BIGINT),
	CAST(SUM(machine_opens) AS BIGINT), CAST(SUM(machine_clicks) AS BIGINT)`

// group is one summed group of rollup rows: its key (a day, or a
// dimension's value) and its counters.
type group struct {
	day    int64
	value  string
	counts Counts
}

func (c *Counts) dest() []any {
	return []any{&c.Sent, &c.Delivered, &c.Bounced, &c.Complained, &c.Opens, &c.UniqueOpens, &c.Clicks, &c.UniqueClicks, &c.MachineOpens, &c.MachineClicks}
}

// source is the table and WHERE clause a query reads.
type source struct {
	where string
	args  []any
	table string
}

// sourceFor builds the WHERE clause of q over the days [from, to] on the
// rows of tagKey (and tagValue when not nil), "" being the email as a
// whole. Without a domain, class or template filter or breakdown, the rows
// per day (and tag value) of analytics_days answer; otherwise
// analytics_cells, a row per combination.
func sourceFor(q *Query, from, to int64, tagKey string, tagValue *string) source {
	s := source{table: "analytics_days"}
	if q.Domain != "" || q.MailClass != "" || q.TemplateID != "" || (q.Breakdown != "" && q.Breakdown != BreakdownTag) {
		s.table = "analytics_cells"
	}
	var b strings.Builder
	b.WriteString(`workspace_id = ? AND tag_key = ? AND day >= ? AND day <= ?`)
	args := []any{q.WorkspaceID, tagKey, from, to}
	if tagValue != nil {
		b.WriteString(` AND tag_value = ?`)
		args = append(args, *tagValue)
	}
	if q.Domain != "" {
		b.WriteString(` AND domain = ?`)
		args = append(args, q.Domain)
	}
	if q.MailClass != "" {
		b.WriteString(` AND mail_class = ?`)
		args = append(args, q.MailClass)
	}
	if q.TemplateID != "" {
		b.WriteString(` AND template_id = ?`)
		args = append(args, q.TemplateID)
	}
	s.where, s.args = b.String(), args
	return s
}

// byDay sums the source's rows per day.
func byDay(ctx context.Context, db store.Querier, s source) ([]group, error) {
	return store.QueryAll(ctx, db, func(sc store.Scanner) (group, error) {
		var g group
		err := sc.Scan(append([]any{&g.day}, g.counts.dest()...)...)
		return g, err
	}, `SELECT day, `+sums+` FROM `+s.table+` WHERE `+s.where+` GROUP BY day ORDER BY day`, s.args...)
}

// breakdownColumns are the columns a breakdown groups by.
var breakdownColumns = map[string]string{
	BreakdownDomain: "domain", BreakdownMailClass: "mail_class", BreakdownTemplate: "template_id", BreakdownTag: "tag_value",
}

// byValue sums the source's rows per value of a breakdown's column.
func byValue(ctx context.Context, db store.Querier, s source, breakdown string) ([]group, error) {
	col := breakdownColumns[breakdown]
	return store.QueryAll(ctx, db, func(sc store.Scanner) (group, error) {
		var g group
		err := sc.Scan(append([]any{&g.value}, g.counts.dest()...)...)
		return g, err
	}, `SELECT `+col+`, `+sums+` FROM `+s.table+` WHERE `+s.where+` GROUP BY `+col, s.args...)
}

// TagKey is a tag key and the sends that carried it.
type TagKey struct {
	Key  string
	Sent int64
}

// topTagKeys lists the workspace's tag keys by sends over [from, to].
func topTagKeys(ctx context.Context, db store.Querier, workspaceID string, from, to int64, limit int) ([]TagKey, error) {
	return store.QueryAll(ctx, db, func(sc store.Scanner) (TagKey, error) {
		var k TagKey
		err := sc.Scan(&k.Key, &k.Sent)
		return k, err
	}, `SELECT tag_key, CAST(SUM(sent) AS BIGINT) AS s FROM analytics_days
		WHERE workspace_id = ? AND tag_key <> '' AND day >= ? AND day <= ? GROUP BY tag_key ORDER BY s DESC, tag_key LIMIT ?`,
		workspaceID, from, to, limit)
}
