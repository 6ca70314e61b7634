package rules

import (
	"strings"
	"time"

	"mailroom/internal/store"
)

// Dialect is what the compiled SQL needs from the database: each method
// is one real difference between SQLite and PostgreSQL (*store.DB has
// them, in internal/store/dialect.go).
type Dialect interface {
	JSONText(col, key string) store.Expr
	JSONArrayHas(col, value string) store.Expr
	HasSubstring(x store.Expr, needle string) store.Expr
	IsDecimal(x store.Expr) store.Expr
	Real(x store.Expr) store.Expr
	Bytewise() string
	Let(x store.Expr, f func(v store.Expr) store.Expr) store.Expr
}

var _ Dialect = (*store.DB)(nil)

// Columns names the SQL a rule reads. The query's owner (the contacts
// area, which holds the tables) supplies them, so this package never names
// a table.
type Columns struct {
	Email string // normalized address (lowercase)
	// Attributes are JSON objects of strings, as text, read in order: the
	// first that has a name gives its value (a membership's merge fields
	// over the contact's attributes).
	Attributes []string
	// FirstName and LastName are the contact's name columns: a name rule
	// reads them, or the attribute of that name when empty.
	FirstName, LastName string
	Tags                string // JSON array of lowercase tags, as text
	CreatedAt           string // unix ms
	Status              string // membership status ("" outside an audience)
	JoinedAt            string // membership created_at, unix ms
	// Suppressed is a condition true when the person's address is
	// suppressed for the workspace.
	Suppressed store.Expr
	// LastOpened and LastClicked are the unix ms of the person's last human
	// open and click, NULL when none; "" means none is recorded yet.
	LastOpened, LastClicked string
	// OptedOut is a condition true when the person switched topic off; nil
	// means no topic opt-outs are recorded yet.
	OptedOut func(topic string) store.Expr
}

var (
	sqlTrue  = store.Expr{SQL: "(1=1)"}
	sqlFalse = store.Expr{SQL: "(1=0)"}
)

const day = int64(24 * time.Hour / time.Millisecond)

// SQL compiles the set to a condition over cols. now anchors within_days.
// An empty set is true. The condition is never NULL.
func (s *Set) SQL(d Dialect, cols Columns, now time.Time) store.Expr {
	if len(s.preds) == 0 {
		return sqlTrue
	}
	joiner := " AND "
	if s.Mode == Any {
		joiner = " OR "
	}
	parts := []any{"("}
	for i, p := range s.preds {
		if i > 0 {
			parts = append(parts, joiner)
		}
		parts = append(parts, p.sql(d, cols, now.UnixMilli()))
	}
	return store.Cat(append(parts, ")")...)
}

var (
	cat = store.Cat
	val = store.Val
)

// tval is a text value; the cast tells PostgreSQL its type where an
// overloaded function (length, ->>) could not infer it.
func tval(v string) store.Expr { return cat("CAST(", val(v), " AS TEXT)") }

func col(c string) store.Expr { return store.Expr{SQL: c} }

func not(e store.Expr) store.Expr { return cat("(NOT ", e, ")") }

// sql is one predicate; it is never NULL, so that all and any combine as
// they do in Go.
func (p pred) sql(d Dialect, c Columns, now int64) store.Expr {
	switch p.kind {
	case kEmail:
		return textOp(d, col(c.Email), p.op, p.str)
	case kDomain:
		switch p.op {
		case "in":
			parts := []any{"("}
			for i, dom := range p.strs {
				if i > 0 {
					parts = append(parts, " OR ")
				}
				parts = append(parts, endsWith(col(c.Email), "@"+dom))
			}
			return cat(append(parts, ")")...)
		case "neq":
			return not(endsWith(col(c.Email), "@"+p.str))
		default:
			return endsWith(col(c.Email), "@"+p.str)
		}
	case kAttr:
		x := d.JSONText(c.Attributes[0], p.attr)
		if len(c.Attributes) > 1 {
			parts := []any{"COALESCE(", x}
			for _, a := range c.Attributes[1:] {
				parts = append(parts, ", ", d.JSONText(a, p.attr))
			}
			x = cat(append(parts, ")")...)
		}
		if n := map[string]string{"first_name": c.FirstName, "last_name": c.LastName}[p.attr]; p.name && n != "" {
			x = cat("COALESCE(NULLIF(", col(n), ", ''), ", x, ")")
		}
		switch p.op {
		case "exists":
			return cat("(", x, " IS NOT NULL)")
		case "not_exists":
			return cat("(", x, " IS NULL)")
		}
		return d.Let(x, func(v store.Expr) store.Expr { return p.attrSQL(d, v) })
	case kTag:
		q := d.JSONArrayHas(c.Tags, p.str)
		if p.op == "not_has" {
			return not(q)
		}
		return q
	case kTopic:
		if c.OptedOut == nil {
			// Topics are opt-out categories: with no opt-out recorded,
			// everyone is subscribed.
			if p.op == "subscribed" {
				return sqlTrue
			}
			return sqlFalse
		}
		if p.op == "subscribed" {
			return not(c.OptedOut(p.str))
		}
		return c.OptedOut(p.str)
	case kStatus:
		if p.op == "neq" {
			return cat("(", c.Status, " <> ", tval(p.str), ")")
		}
		return cat("(", c.Status, " = ", tval(p.str), ")")
	case kJoined:
		return timeOp(c.JoinedAt, p, now)
	case kCreated:
		return timeOp(c.CreatedAt, p, now)
	case kOpened, kClicked:
		last := c.LastOpened
		if p.kind == kClicked {
			last = c.LastClicked
		}
		if last == "" {
			// Nothing recorded: nobody opened or clicked.
			if p.op == "within_days" {
				return sqlFalse
			}
			return sqlTrue
		}
		switch p.op {
		case "never":
			return cat("(", last, " IS NULL)")
		case "within_days":
			return cat("(", last, " IS NOT NULL AND ", last, " >= ", val(now-int64(p.num)*day), ")")
		default:
			return cat("(", last, " IS NULL OR ", last, " < ", val(now-int64(p.num)*day), ")")
		}
	case kSuppressed:
		if p.flag {
			return c.Suppressed
		}
		return not(c.Suppressed)
	}
	return sqlFalse
}

// attrSQL is an attribute predicate over x, the attribute's value (NULL
// when the person has none), which it may read several times.
func (p pred) attrSQL(d Dialect, x store.Expr) store.Expr {
	switch p.op {
	case "neq":
		return cat("(", x, " IS NULL OR ", x, " <> ", tval(p.str), ")")
	case "gt", "lt":
		cmp := " > "
		if p.op == "lt" {
			cmp = " < "
		}
		str := cat(x, d.Bytewise(), cmp, tval(p.str))
		if !p.isNum {
			return cat("(", x, " IS NOT NULL AND ", str, ")")
		}
		f, _ := decimal(p.str)
		return cat("(", x, " IS NOT NULL AND (CASE WHEN ", d.IsDecimal(x), " THEN ", d.Real(x), cmp, val(f), " ELSE ", str, " END))")
	default:
		return cat("(", x, " IS NOT NULL AND ", textOp(d, x, p.op, p.str), ")")
	}
}

func textOp(d Dialect, x store.Expr, op, v string) store.Expr {
	switch op {
	case "eq":
		return cat("(", x, " = ", tval(v), ")")
	case "neq":
		return cat("(", x, " <> ", tval(v), ")")
	case "contains":
		return d.HasSubstring(x, v)
	case "starts_with":
		return cat("(substr(", x, ", 1, length(", tval(v), ")) = ", tval(v), ")")
	case "ends_with":
		return endsWith(x, v)
	}
	return sqlFalse
}

// endsWith compares the tail of x to v; substr and length count
// characters alike in both dialects.
func endsWith(x store.Expr, v string) store.Expr {
	return cat("(length(", x, ") >= length(", tval(v), ") AND substr(", x, ", length(", x, ") - length(", tval(v), ") + 1) = ", tval(v), ")")
}

func timeOp(column string, p pred, now int64) store.Expr {
	switch p.op {
	case "before":
		return cat("(", column, " < ", val(p.at), ")")
	case "after":
		return cat("(", column, " > ", val(p.at), ")")
	case "within_days":
		return cat("(", column, " >= ", val(now-int64(p.num)*day), ")")
	default:
		return cat("(", column, " < ", val(now-int64(p.num)*day), ")")
	}
}

// joinWords is strings.Join with a last separator ("a, b or c").
func joinWords(words []string, last string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + last + " " + words[len(words)-1]
}
