package dashboard

import (
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/requestlog"
)

// logRows is how many calls a page of the Logs list shows.
const logRows = 50

type logsView struct {
	Status, Method string
	Path           string // a path prefix, such as /v1/emails
	Statuses       []string
	Methods        []string
	Rows           []requestlog.Entry
	Next           string // the next page's query string
}

// requestLogs is the Logs page: the workspace's API calls, newest first,
// from the same request log as GET /v1/logs (the last 31 days).
func (x *Dashboard) requestLogs(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	v := logsView{Status: q.Get("status"), Method: q.Get("method"), Path: strings.TrimSpace(q.Get("path")), Statuses: []string{"2xx", "4xx", "5xx"},
		Methods: []string{"GET", "POST", "PATCH", "PUT", "DELETE"}}
	after := q.Get("after")
	if len(after) > 100 {
		return apierr.InvalidRequest("The page link is not valid.")
	}
	rows, err := x.d.RequestLogs.List(r.Context(), s.key.WorkspaceID, requestlog.Query{Status: v.Status, Method: v.Method, PathPrefix: v.Path, Limit: logRows + 1, After: after})
	if err != nil {
		return err
	}
	if len(rows) > logRows {
		rows = rows[:logRows]
		v.Next = urlValues{"status": v.Status, "method": v.Method, "path": v.Path, "after": rows[len(rows)-1].ID}.encode()
	}
	v.Rows = rows
	x.render(w, r, s, http.StatusOK, "logs", v)
	return nil
}

// requestLog is one call: what the log keeps of it, and no body.
func (x *Dashboard) requestLog(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := x.d.RequestLogs.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "log", e)
	return nil
}
