package dashboard

import (
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
	"mailroom/internal/suppressions"
)

// suppressionRows is how many rows a page of the list shows.
const suppressionRows = 50

type suppressionsView struct {
	Email, Reason string
	Reasons       []string
	Rows          []suppressions.Suppression
	Total         int
	Next          string // the next page's query string
}

func (x *Dashboard) suppressions(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	v := suppressionsView{Email: strings.TrimSpace(q.Get("email")), Reason: q.Get("reason"), Reasons: suppressionReasons}
	f := suppressions.Filter{Reason: v.Reason}
	if v.Reason != "" && !suppressions.ValidReason(v.Reason) {
		return apierr.InvalidRequest("Unknown reason %q.", v.Reason)
	}
	if v.Email != "" {
		addr, err := sending.ParseAddress(v.Email)
		if err != nil {
			return apierr.InvalidRequest("%q is not an email address.", v.Email)
		}
		f.Email = suppressions.Normalize(addr.Email) // as stored, like GET /v1/suppressions?email=
	}
	var pos *suppressions.Position
	if a := q.Get("after"); a != "" {
		ms, id, err := parseCursor(a)
		if err != nil {
			return err
		}
		pos = &suppressions.Position{At: ms, ID: id}
	}
	rows, total, err := x.d.Suppressions.List(r.Context(), s.key.WorkspaceID, f, suppressionRows+1, pos)
	if err != nil {
		return err
	}
	if len(rows) > suppressionRows {
		rows = rows[:suppressionRows]
		last := rows[len(rows)-1]
		v.Next = urlValues{"email": v.Email, "reason": v.Reason, "after": cursor(last.CreatedAt.UnixMilli(), last.ID)}.encode()
	}
	v.Rows, v.Total = rows, total
	x.render(w, r, s, http.StatusOK, "suppressions", v)
	return nil
}

// suppressionReasons are the reasons a suppression may carry.
var suppressionReasons = []string{suppressions.ReasonManual, suppressions.ReasonBounce, suppressions.ReasonComplaint, suppressions.ReasonUnsub}

func (x *Dashboard) addSuppression(w http.ResponseWriter, r *http.Request, s *session) error {
	addr, err := sending.ParseAddress(strings.TrimSpace(r.PostForm.Get("email")))
	if err != nil {
		return apierr.InvalidRequest("%q is not an email address.", r.PostForm.Get("email"))
	}
	reason := r.PostForm.Get("reason")
	if reason == "" {
		reason = suppressions.ReasonManual
	}
	if !suppressions.ValidReason(reason) {
		return apierr.InvalidRequest("Unknown reason %q.", reason)
	}
	if _, _, err := x.d.Suppressions.Add(r.Context(), s.key.WorkspaceID, addr.Email, reason); err != nil {
		return err
	}
	return redirect(w, r, "/suppressions?ok=suppressed")
}

func (x *Dashboard) removeSuppression(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.d.Suppressions.Delete(r.Context(), s.key.WorkspaceID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/suppressions?ok=removed")
}
