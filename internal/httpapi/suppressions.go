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
	Object        string  `json:"object"` // "suppression", as the Resend SDKs read it
	ID            string  `json:"id"`
	Email         string  `json:"email"`
	Reason        string  `json:"reason"`
	IsGlobal      bool    `json:"is_global"`
	CreatedAt     string  `json:"created_at"`
	SourceEmailID *string `json:"source_email_id"`
}

func suppressionOut(s suppressions.Suppression) suppressionJSON {
	out := suppressionJSON{Object: "suppression", ID: s.ID, Email: s.Email, Reason: s.Reason, IsGlobal: s.IsGlobal, CreatedAt: ts(s.CreatedAt)}
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

// byAddress tells a path segment naming an address (it has an @) from an
// id, as the Resend SDKs pass either; an @ that is no address is 422.
func byAddress(seg string) (email string, isEmail bool, err error) {
	if !strings.Contains(seg, "@") {
		return "", false, nil
	}
	a, perr := sending.ParseAddress(seg)
	if perr != nil {
		return "", true, apierr.Invalid422("invalid_email", "%q is not an email address.", clipParam(seg))
	}
	return a.Email, true, nil
}

// getSuppression reads a row by id or, beside it, by address (the
// workspace's own row first, then a global one).
func (h *handler) getSuppression(w http.ResponseWriter, r *http.Request) error {
	ws := apiKey(r).WorkspaceID
	email, isEmail, err := byAddress(r.PathValue("id"))
	if err != nil {
		return err
	}
	if !isEmail {
		s, err := h.d.Services.Suppressions.Get(r.Context(), ws, r.PathValue("id"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, suppressionOut(s))
		return nil
	}
	rows, _, err := h.d.Services.Suppressions.List(r.Context(), ws, suppressions.Filter{Email: suppressions.Normalize(email)}, 2, nil)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return apierr.New(http.StatusNotFound, "not_found", "No suppression of that address on this workspace.")
	}
	best := rows[0]
	for _, s := range rows {
		if !s.IsGlobal {
			best = s
			break
		}
	}
	writeJSON(w, http.StatusOK, suppressionOut(best))
	return nil
}

func (h *handler) deleteSuppression(w http.ResponseWriter, r *http.Request) error {
	ws, id := apiKey(r).WorkspaceID, r.PathValue("id")
	email, isEmail, err := byAddress(id)
	if err != nil {
		return err
	}
	if isEmail {
		if id, err = h.d.Services.Suppressions.DeleteEmail(r.Context(), ws, suppressions.Normalize(email)); err != nil {
			return err
		}
	} else if err := h.d.Services.Suppressions.Delete(r.Context(), ws, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedJSON{Deleted: id})
	return nil
}

// suppressionBatchRequest is the Resend SDKs' batch: up to 100 addresses
// (or, to remove, ids).
type suppressionBatchRequest struct {
	Emails []string `json:"emails"`
	IDs    []string `json:"ids"`
}

type suppressionBatchJSON struct {
	Data []suppressionJSON `json:"data"`
}

type suppressionBatchRemovedJSON struct {
	Object  string   `json:"object"`
	Deleted []string `json:"deleted"`
}

const maxSuppressionBatch = 100

func (req suppressionBatchRequest) check(ids bool) error {
	n := len(req.Emails) + len(req.IDs)
	switch {
	case !ids && len(req.IDs) > 0:
		return apierr.InvalidRequest("Unknown field \"ids\".")
	case n == 0:
		return apierr.InvalidRequest("emails is required: a list of 1 to %d addresses.", maxSuppressionBatch)
	case n > maxSuppressionBatch:
		return apierr.InvalidRequest("At most %d entries in one batch; got %d.", maxSuppressionBatch, n)
	}
	return nil
}

// addSuppressionBatch adds each address as POST /v1/suppressions would, all
// checked before any is written.
func (h *handler) addSuppressionBatch(w http.ResponseWriter, r *http.Request) error {
	var req suppressionBatchRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if err := req.check(false); err != nil {
		return err
	}
	addrs := make([]string, len(req.Emails))
	for i, e := range req.Emails {
		a, err := sending.ParseAddress(e)
		if err != nil {
			return apierr.InvalidRequest("emails[%d] %s.", i, err.Error())
		}
		addrs[i] = a.Email
	}
	out := suppressionBatchJSON{Data: make([]suppressionJSON, 0, len(addrs))}
	for _, a := range addrs {
		s, _, err := h.d.Services.Suppressions.Add(r.Context(), apiKey(r).WorkspaceID, a, suppressions.ReasonManual)
		if err != nil {
			return err
		}
		out.Data = append(out.Data, suppressionOut(s))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// removeSuppressionBatch removes the workspace's rows of each address or
// id; one that has none is skipped, not an error.
func (h *handler) removeSuppressionBatch(w http.ResponseWriter, r *http.Request) error {
	var req suppressionBatchRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if err := req.check(true); err != nil {
		return err
	}
	ws := apiKey(r).WorkspaceID
	out := suppressionBatchRemovedJSON{Object: "list", Deleted: []string{}}
	for _, e := range req.Emails {
		id, err := h.d.Services.Suppressions.DeleteEmail(r.Context(), ws, suppressionAddress(e))
		if e, ok := apierr.As(err); ok && e.Status == http.StatusNotFound {
			continue
		} else if err != nil {
			return err
		}
		out.Deleted = append(out.Deleted, id)
	}
	for _, id := range req.IDs {
		err := h.d.Services.Suppressions.Delete(r.Context(), ws, id)
		if e, ok := apierr.As(err); ok && e.Status == http.StatusNotFound {
			continue
		} else if err != nil {
			return err
		}
		out.Deleted = append(out.Deleted, id)
	}
	writeJSON(w, http.StatusOK, out)
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
