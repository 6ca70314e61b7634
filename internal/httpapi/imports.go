package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
)

type importResultJSON struct {
	Created    int             `json:"created"`
	DryRun     bool            `json:"dry_run"`
	Duplicates int             `json:"duplicates"`
	Errors     []importRowJSON `json:"errors"`
	Held       []importRowJSON `json:"held"`
	HeldBack   int             `json:"held_back"`
	Imported   int             `json:"imported"`
	Skipped    int             `json:"skipped"`
	TagsAdded  int             `json:"tags_added"`
	Unchanged  int             `json:"unchanged"`
	Updated    int             `json:"updated"`
}

type importRowJSON struct {
	Email  string `json:"email"`
	Reason string `json:"reason"`
	Row    int    `json:"row"`
	Status string `json:"status,omitempty"` // held rows: the status written
}

// importMapping reads the mapping.* query parameters.
func importMapping(r *http.Request) contacts.ImportMapping {
	q := r.URL.Query()
	m := contacts.ImportMapping{Email: q.Get("mapping.email"), Status: q.Get("mapping.status"), Tags: q.Get("mapping.tags"),
		Attr: map[string]string{}, Ignore: map[string]bool{}, Roles: map[string]string{}}
	for _, role := range []string{"first_name", "last_name"} {
		if col := q.Get("mapping." + role); col != "" {
			m.Roles[col] = role
		}
	}
	for k, vs := range q {
		if col, ok := strings.CutPrefix(k, "mapping.attr."); ok && col != "" && len(vs) > 0 {
			m.Attr[col] = vs[len(vs)-1]
		}
	}
	for _, c := range q["mapping.ignore"] {
		m.Ignore[c] = true
	}
	return m
}

func (h *handler) importContacts(w http.ResponseWriter, r *http.Request) error {
	dryRun := false
	if v := r.URL.Query().Get("dry_run"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return apierr.InvalidRequest("dry_run must be true or false.")
		}
		dryRun = b
	}
	if r.ContentLength > contacts.MaxImportBytes {
		return contacts.ErrImportTooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, contacts.MaxImportBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return contacts.ErrImportTooLarge()
		}
		return bodyError(err)
	}
	m := importMapping(r)
	var rows []contacts.ImportRow
	if strings.Contains(strings.ToLower(r.Header.Get("Content-Type")), "csv") {
		rows, err = contacts.ParseCSV(body, m)
	} else {
		var envDry *bool
		rows, envDry, err = contacts.ParseJSON(body, m)
		if envDry != nil {
			dryRun = dryRun || *envDry
		}
	}
	if err != nil {
		return err
	}
	res, err := h.d.Services.Contacts.Import(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), rows, dryRun)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if dryRun {
		status = http.StatusOK
	}
	writeJSON(w, status, importOut(res, dryRun))
	return nil
}

func importOut(res contacts.ImportResult, dryRun bool) importResultJSON {
	out := importResultJSON{Created: res.Created, Updated: res.Updated, Unchanged: res.Unchanged, Duplicates: res.Duplicates,
		TagsAdded: res.TagsAdded, Imported: res.Imported, HeldBack: res.HeldBack, Skipped: res.Skipped, DryRun: dryRun,
		Held: make([]importRowJSON, 0, len(res.Held)), Errors: make([]importRowJSON, 0, len(res.Errors))}
	for _, hr := range res.Held {
		out.Held = append(out.Held, importRowJSON{Row: hr.Row, Email: hr.Email, Status: hr.Status, Reason: hr.Reason})
	}
	for _, e := range res.Errors {
		out.Errors = append(out.Errors, importRowJSON{Row: e.Row, Email: e.Email, Reason: e.Reason})
	}
	return out
}
