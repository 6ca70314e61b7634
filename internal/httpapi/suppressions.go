package httpapi

import (
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
	"mailroom/internal/suppressions"
)

type createSuppressionRequest struct {
	Email  *string `json:"email"`  // required; pointers tell absent from ""
	Reason *string `json:"reason"` // default manual
}

type suppressionList struct {
	HasMore      bool              `json:"has_more"`
	NextCursor   *string           `json:"next_cursor"`
	Suppressions []suppressionJSON `json:"suppressions"`
	Total        int               `json:"total"`
}

type suppressionJSON struct {
	ID            string  `json:"id"`
	Email         string  `json:"email"`
	Reason        string  `json:"reason"`
	IsGlobal      bool    `json:"is_global"`
	CreatedAt     string  `json:"created_at"`
	SourceEmailID *string `json:"source_email_id"`
}

func suppressionOut(s suppressions.Suppression) suppressionJSON {
	out := suppressionJSON{ID: s.ID, Email: s.Email, Reason: s.Reason, IsGlobal: s.IsGlobal, CreatedAt: ts(s.CreatedAt)}
	if s.SourceEmailID != "" {
		src := s.SourceEmailID
		out.SourceEmailID = &src
	}
	return out
}

// suppressionAddress is the stored form of an address a caller names: the
// parsed addr-spec (IDN domains in punycode) when it parses, else the text
// as given, so a filter or delete still matches rows written by other paths.
func suppressionAddress(s string) string {
	if a, err := sending.ParseAddress(s); err == nil {
		return suppressions.Normalize(a.Email)
	}
	return suppressions.Normalize(s)
}

func (h *handler) listSuppressions(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 50, 200, false)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := suppressions.Filter{Reason: q.Get("reason")}
	if q.Has("reason") && f.Reason == "" {
		return apierr.InvalidRequest("reason must be one of bounce, complaint, unsub, manual.")
	}
	if e := q.Get("email"); e != "" {
		f.Email = suppressionAddress(e)
	}
	var pos *suppressions.Position
	if pg.After != nil {
		pos = &suppressions.Position{At: pg.After.At, ID: pg.After.ID}
	}
	rows, total, err := h.d.Services.Suppressions.List(r.Context(), apiKey(r).WorkspaceID, f, pg.Limit+1, pos)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(rows), func(i int) Cursor {
		return Cursor{At: rows[i].CreatedAt.UnixMilli(), ID: rows[i].ID}
	})
	out := make([]suppressionJSON, 0, n)
	for _, s := range rows[:n] {
		out = append(out, suppressionOut(s))
	}
	writeJSON(w, http.StatusOK, suppressionList{Suppressions: out, NextCursor: meta.NextCursor, HasMore: meta.HasMore, Total: total})
	return nil
}

func (h *handler) createSuppression(w http.ResponseWriter, r *http.Request) error {
	var req createSuppressionRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Email == nil || strings.TrimSpace(*req.Email) == "" {
		return apierr.InvalidRequest("email is required.")
	}
	addr, err := sending.ParseAddress(*req.Email)
	if err != nil {
		return apierr.InvalidRequest("email %s.", err.Error())
	}
	reason := suppressions.ReasonManual
	if req.Reason != nil {
		reason = *req.Reason
	}
	s, created, err := h.d.Services.Suppressions.Add(r.Context(), apiKey(r).WorkspaceID, addr.Email, reason)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, suppressionOut(s))
	return nil
}

func (h *handler) deleteSuppression(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.d.Services.Suppressions.Delete(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedJSON{Deleted: id})
	return nil
}

func (h *handler) deleteSuppressionQuery(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	email, id := q.Get("email"), q.Get("id")
	switch {
	case email != "" && id != "":
		return apierr.InvalidRequest("Pass email or id, not both.")
	case id != "":
		if err := h.d.Services.Suppressions.Delete(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
			return err
		}
	case email != "":
		var err error
		id, err = h.d.Services.Suppressions.DeleteEmail(r.Context(), apiKey(r).WorkspaceID, suppressionAddress(email))
		if err != nil {
			return err
		}
	default:
		return apierr.InvalidRequest("Pass the address to clear as ?email=, or the row as /v1/suppressions/{id}.")
	}
	writeJSON(w, http.StatusOK, deletedJSON{Deleted: id})
	return nil
}
