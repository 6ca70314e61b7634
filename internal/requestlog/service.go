package requestlog

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// MaxWindow is the longest time one list reads: a query over a huge window
// is refused rather than scanning the whole log.
const MaxWindow = 31 * 24 * time.Hour

// Service reads the log of a workspace.
type Service struct {
	db    *store.DB
	clock clock.Clock
}

// New builds the service.
func New(db *store.DB, c clock.Clock) *Service { return &Service{db: db, clock: c} }

// Query is a list's filters as the client wrote them ("" for none).
type Query struct {
	Status     string // 404, or a class: 4xx
	Method     string // GET, POST, ...
	PathPrefix string // /v1/emails
	Since      string // RFC 3339; default Until less MaxWindow
	Until      string // RFC 3339, exclusive; default now
	Limit      int
	After      string // the id of the last row of the previous page
}

// filter is a Query checked and ready for SQL.
type filter struct {
	statusLo, statusHi int // status in [lo, hi); 0, 0 for any
	method, prefix     string
	from, to           string // id bounds: from <= id < to
	after              string
	limit              int
}

var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// check turns q into a filter, or says what is wrong with it.
func (s *Service) check(q Query) (filter, error) {
	f := filter{method: strings.ToUpper(q.Method), prefix: q.PathPrefix, after: q.After, limit: q.Limit}
	if f.method != "" && !slices.Contains(methods, f.method) {
		return f, apierr.InvalidRequest("method %q is not one of %s.", clip(q.Method, 20), strings.Join(methods, ", "))
	}
	if q.Status != "" {
		lo, hi, ok := parseStatus(q.Status)
		if !ok {
			return f, apierr.InvalidRequest("status %q is not a status code (404) or a class (4xx).", clip(q.Status, 20))
		}
		f.statusLo, f.statusHi = lo, hi
	}
	if len(f.prefix) > maxPath {
		return f, apierr.InvalidRequest("path is longer than %d characters.", maxPath)
	}
	until := s.clock.Now()
	if q.Until != "" {
		t, err := time.Parse(time.RFC3339, q.Until)
		if err != nil {
			return f, apierr.InvalidRequest("until %q is not an RFC 3339 time (2026-01-31T12:00:00Z).", clip(q.Until, 40))
		}
		until = t
	}
	since := until.Add(-MaxWindow)
	if q.Since != "" {
		t, err := time.Parse(time.RFC3339, q.Since)
		if err != nil {
			return f, apierr.InvalidRequest("since %q is not an RFC 3339 time (2026-01-01T00:00:00Z).", clip(q.Since, 40))
		}
		since = t
	}
	if !since.Before(until) {
		return f, apierr.InvalidRequest("since must be before until.")
	}
	if until.Sub(since) > MaxWindow {
		return f, apierr.InvalidRequest("The window from since to until is %s; at most %d days are read at once.",
			until.Sub(since).Round(time.Hour), int(MaxWindow/(24*time.Hour))).
			WithNext("Narrow since and until, and page through each window with the cursor.")
	}
	f.from, f.to = ids.Floor(idPrefix, since), ids.Floor(idPrefix, until)
	return f, nil
}

// parseStatus reads 404 (that status) or 4xx (its class).
func parseStatus(s string) (lo, hi int, ok bool) {
	if len(s) == 3 && (s[1] == 'x' || s[1] == 'X') && (s[2] == 'x' || s[2] == 'X') && s[0] >= '1' && s[0] <= '5' {
		lo = int(s[0]-'0') * 100
		return lo, lo + 100, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 599 {
		return 0, 0, false
	}
	return n, n + 1, true
}

// List returns the workspace's calls matching q, newest first, q.Limit of
// them at most.
func (s *Service) List(ctx context.Context, workspaceID string, q Query) ([]Entry, error) {
	f, err := s.check(q)
	if err != nil {
		return nil, err
	}
	return list(ctx, s.db, workspaceID, f)
}

// Get returns one call of the workspace's log.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (Entry, error) {
	e, err := get(ctx, s.db, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return e, apierr.NotFound("request log entry")
	}
	return e, err
}
