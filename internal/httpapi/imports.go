package httpapi

import (
	"errors"
	"fmt"
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
	if strings.HasPrefix(r.PathValue("id"), "seg_") {
		return h.createContactInSegment(w, r) // the Resend SDKs' contacts.create{audienceId}
	}
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

// segmentContactRequest is the Resend SDKs' contacts.create{audienceId}:
// their audiences are segments, so the id in the path is a segment's.
type segmentContactRequest struct {
	Email        *string        `json:"email"`
	FirstName    *string        `json:"first_name"`
	LastName     *string        `json:"last_name"`
	Unsubscribed *bool          `json:"unsubscribed"`
	Properties   map[string]any `json:"properties"`
}

// createContactInSegment creates a contact "in" a segment without rules:
// the workspace contact (which a rule-less segment holds), and, when the
// segment narrows an audience, its membership there. A segment with rules
// holds whoever they match, so nobody can be added to it.
func (h *handler) createContactInSegment(w http.ResponseWriter, r *http.Request) error {
	ws := apiKey(r).WorkspaceID
	seg, err := h.d.Services.Segments.Lookup(r.Context(), ws, r.PathValue("id"))
	if err != nil {
		return err
	}
	var req segmentContactRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if len(seg.Rules()) > 0 {
		return apierr.Invalid422("segment_has_rules", "Segment %s has rules: its members are the contacts they match, so none is added to it by hand.", seg.ID).
			WithNext("Create the contact with POST /v1/contacts; it joins the segment when it matches the rules.")
	}
	if req.Email == nil || strings.TrimSpace(*req.Email) == "" {
		return apierr.InvalidRequest("email is required.")
	}
	email, err := contactEmail("email", *req.Email)
	if err != nil {
		return err
	}
	in := contacts.NewContact{Email: email}
	if req.FirstName != nil {
		in.FirstName = *req.FirstName
	}
	if req.LastName != nil {
		in.LastName = *req.LastName
	}
	if len(req.Properties) > 0 {
		in.Attributes = map[string]string{}
		for k, v := range req.Properties {
			in.Attributes[k] = fmt.Sprint(v)
		}
	}
	c, err := h.d.Services.Contacts.Create(r.Context(), ws, in)
	if err != nil {
		return err
	}
	if seg.AudienceID != "" {
		subscribed := req.Unsubscribed == nil || !*req.Unsubscribed
		if _, err := h.d.Services.Contacts.Import(r.Context(), ws, seg.AudienceID,
			[]contacts.ImportRow{{Row: 1, Email: email, Subscribed: &subscribed}}, false); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusCreated, contactOut(c))
	return nil
}
