package httpapi

import (
	"net/http"

	"mailroom/internal/requestlog"
)

// requestLogJSON is one call of the request log: the spec has no such
// route, so its names are the Resend SDK's (object "log", endpoint,
// response_status, request_body, response_body) with Mailroom's beside
// them. The bodies are summaries: nothing of their content is kept.
type requestLogJSON struct {
	Object         string           `json:"object"`
	ID             string           `json:"id"`
	CreatedAt      string           `json:"created_at"`
	Method         string           `json:"method"`
	Path           string           `json:"path"`
	Endpoint       string           `json:"endpoint"`
	Status         int              `json:"status"`
	ResponseStatus int              `json:"response_status"`
	ErrorCode      *string          `json:"error_code"`
	APIKeyID       string           `json:"api_key_id"`
	UserAgent      *string          `json:"user_agent"`
	DurationMS     float64          `json:"duration_ms"`
	RequestID      string           `json:"request_id"`
	RequestBody    requestBodyJSON  `json:"request_body"`
	ResponseBody   responseBodyJSON `json:"response_body"`
}

// requestBodyJSON and responseBodyJSON say what was sent and answered
// without its content (docs/decisions.md, "The request log").
type requestBodyJSON struct {
	Redacted    bool    `json:"redacted"`
	Bytes       int64   `json:"bytes"`
	ContentType *string `json:"content_type"`
}

type responseBodyJSON struct {
	Redacted  bool    `json:"redacted"`
	Bytes     int64   `json:"bytes"`
	ErrorCode *string `json:"error_code"`
}

type requestLogList struct {
	Object string           `json:"object"`
	Data   []requestLogJSON `json:"data"`
	listMeta
}

func requestLogOut(e requestlog.Entry) requestLogJSON {
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return requestLogJSON{Object: "log", ID: e.ID, CreatedAt: ts(e.At), Method: e.Method, Path: e.Path, Endpoint: e.Path,
		Status: e.Status, ResponseStatus: e.Status, ErrorCode: nullable(e.ErrorCode), APIKeyID: e.APIKeyID,
		UserAgent: nullable(e.UserAgent), DurationMS: float64(e.Duration.Microseconds()) / 1000, RequestID: e.RequestID,
		RequestBody:  requestBodyJSON{Redacted: true, Bytes: e.RequestBytes, ContentType: nullable(e.ContentType)},
		ResponseBody: responseBodyJSON{Redacted: true, Bytes: e.ResponseBytes, ErrorCode: nullable(e.ErrorCode)}}
}

var logParams = []string{"limit", "cursor", "after", "before", "status", "method", "path", "since", "until"}

func (h *handler) listRequestLogs(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, logParams); err != nil {
		return err
	}
	pg, err := h.pager.page(r, 20, 100, false)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	lq := requestlog.Query{Status: q.Get("status"), Method: q.Get("method"), PathPrefix: q.Get("path"),
		Since: q.Get("since"), Until: q.Get("until"), Limit: pg.Limit + 1}
	if pg.After != nil {
		lq.After = pg.After.ID
	}
	rows, err := h.d.Services.RequestLogs.List(r.Context(), apiKey(r).WorkspaceID, lq)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(rows), func(i int) Cursor { return Cursor{At: rows[i].At.UnixMilli(), ID: rows[i].ID} })
	out := requestLogList{Object: "list", Data: make([]requestLogJSON, 0, n), listMeta: meta}
	for _, e := range rows[:n] {
		out.Data = append(out.Data, requestLogOut(e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getRequestLog(w http.ResponseWriter, r *http.Request) error {
	e, err := h.d.Services.RequestLogs.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, requestLogOut(e))
	return nil
}
