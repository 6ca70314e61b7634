package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
)

// The Resend SDKs' contacts.imports: a CSV file posted as multipart form
// data, run through the same import as POST /v1/audiences/{id}/contacts and
// kept with an id. Without an audience it writes contacts alone.

// importColumnMap is the form's column_map: the CSV column of each field.
type importColumnMap struct {
	Email        *string `json:"email"`
	FirstName    *string `json:"first_name"`
	LastName     *string `json:"last_name"`
	Unsubscribed *string `json:"unsubscribed"`
	Properties   map[string]struct {
		Column string `json:"column"`
		Type   string `json:"type"`
	} `json:"properties"`
}

type importSegmentRef struct {
	ID string `json:"id"`
}

type importCountsJSON struct {
	Total   int `json:"total"`
	Created int `json:"created"`
	Updated int `json:"updated"`
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
}

type contactImportJSON struct {
	Object      string           `json:"object"`
	ID          string           `json:"id"`
	Status      string           `json:"status"`
	AudienceID  *string          `json:"audience_id"`
	Counts      importCountsJSON `json:"counts"`
	CreatedAt   string           `json:"created_at"`
	CompletedAt *string          `json:"completed_at"`
	// Result is the import's own answer (as POST /v1/audiences/{id}/contacts
	// gives it), on the create only.
	Result *importResultJSON `json:"result,omitempty"`
}

type contactImportList struct {
	sdkList[contactImportJSON]
	HasMore bool `json:"has_more"`
}

func contactImportOut(rec contacts.ImportRecord) contactImportJSON {
	return contactImportJSON{Object: "contact_import", ID: rec.ID, Status: rec.Status, AudienceID: opt(rec.AudienceID),
		Counts:    importCountsJSON{Total: rec.Total, Created: rec.Created, Updated: rec.Updated, Skipped: rec.Skipped, Failed: rec.Failed},
		CreatedAt: ts(rec.CreatedAt), CompletedAt: tsPtr(rec.CompletedAt)}
}

// createContactImport reads the form: file (CSV, required), column_map,
// on_conflict (upsert, the only way Mailroom imports), segments (one of an
// audience names the audience), topics (refused), and Mailroom's
// audience_id.
func (h *handler) createContactImport(w http.ResponseWriter, r *http.Request) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		return apierr.InvalidRequest("Send the import as multipart/form-data with the CSV in the file field.").
			WithNext("Or post the rows to POST /v1/audiences/{id}/contacts.")
	}
	if r.ContentLength > contacts.MaxImportBytes+64<<10 {
		return contacts.ErrImportTooLarge()
	}
	r.Body = http.MaxBytesReader(w, r.Body, contacts.MaxImportBytes+64<<10)
	if err := r.ParseMultipartForm(contacts.MaxImportBytes + 64<<10); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return contacts.ErrImportTooLarge()
		}
		return apierr.InvalidRequest("The form does not parse: %s.", err.Error())
	}
	defer r.MultipartForm.RemoveAll()
	f, _, err := r.FormFile("file")
	if err != nil {
		return apierr.InvalidRequest("file is required: the CSV file, as a form file field.")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, contacts.MaxImportBytes+1))
	if err != nil {
		return bodyError(err)
	}
	if len(data) > contacts.MaxImportBytes {
		return contacts.ErrImportTooLarge()
	}
	m, err := columnMapping(r.FormValue("column_map"))
	if err != nil {
		return err
	}
	if v := r.FormValue("on_conflict"); v != "" && v != "upsert" {
		return apierr.Invalid422("invalid_request", "on_conflict %q is not offered: an import updates the contacts it finds (upsert).", clipText(v)).
			WithNext("Omit on_conflict, or send upsert.")
	}
	if r.FormValue("topics") != "" {
		return apierr.Invalid422("invalid_request", "topics is not offered on an import: set each address's topics after it (PATCH /v1/contacts/{id}/topics).")
	}
	audienceID, err := h.importAudience(r, r.FormValue("audience_id"), r.FormValue("segments"))
	if err != nil {
		return err
	}
	rows, err := contacts.ParseCSV(data, m)
	if err != nil {
		return err
	}
	rec, err := h.d.Services.Contacts.ImportRecorded(r.Context(), apiKey(r).WorkspaceID, audienceID, rows)
	if err != nil {
		return err
	}
	out := contactImportOut(rec)
	res := importOut(rec.Result, false)
	out.Result = &res
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// columnMapping turns column_map into the import's mapping.
func columnMapping(raw string) (contacts.ImportMapping, error) {
	m := contacts.ImportMapping{Attr: map[string]string{}, Ignore: map[string]bool{}, Roles: map[string]string{}}
	if raw == "" {
		return m, nil
	}
	var cm importColumnMap
	if err := decodeJSON([]byte(raw), &cm); err != nil {
		return m, apierr.InvalidRequest("column_map must be a JSON object {email?, first_name?, last_name?, unsubscribed?, properties?}.")
	}
	if cm.Email != nil {
		m.Email = *cm.Email
	}
	for col, role := range map[*string]string{cm.FirstName: "first_name", cm.LastName: "last_name", cm.Unsubscribed: "unsubscribed"} {
		if col != nil && *col != "" {
			m.Roles[*col] = role
		}
	}
	for name, p := range cm.Properties {
		if p.Column == "" {
			return m, apierr.InvalidRequest("column_map.properties.%s.column is required: the CSV column holding it.", clipText(name))
		}
		if p.Type != "" && p.Type != "string" && p.Type != "number" && p.Type != "boolean" {
			return m, apierr.InvalidRequest("column_map.properties.%s.type must be string, number or boolean.", clipText(name))
		}
		m.Attr[p.Column] = name
	}
	return m, nil
}

// importAudience is the audience an import goes to: audience_id, else the
// audience of a segment in segments (Mailroom's other segments are rules,
// which no contact is added to), else none.
func (h *handler) importAudience(r *http.Request, audienceID, segments string) (string, error) {
	if segments == "" {
		return audienceID, nil
	}
	var refs []importSegmentRef
	if err := json.Unmarshal([]byte(segments), &refs); err != nil {
		return "", apierr.InvalidRequest("segments must be a JSON array of {id}.")
	}
	for i, ref := range refs {
		seg, err := h.d.Services.Segments.Lookup(r.Context(), apiKey(r).WorkspaceID, ref.ID)
		if err != nil {
			if _, ok := apierr.As(err); ok {
				return "", apierr.Invalid422("invalid_request", "segments[%d]: no segment %q on this workspace.", i, clipText(ref.ID))
			}
			return "", err
		}
		switch {
		case seg.AudienceID == "":
			return "", apierr.Invalid422("invalid_request", "segments[%d]: segment %s is a rule over contacts; an import cannot add contacts to it.", i, seg.ID).
				WithNext("Omit it: the imported contacts meet its rules or not. To import into a list, pass audience_id.")
		case audienceID != "" && seg.AudienceID != audienceID:
			return "", apierr.Invalid422("invalid_request", "segments[%d]: segment %s belongs to audience %s, not %s; an import goes to one audience.", i, seg.ID, seg.AudienceID, audienceID)
		}
		audienceID = seg.AudienceID
	}
	return audienceID, nil
}

func (h *handler) listContactImports(w http.ResponseWriter, r *http.Request) error {
	recs, err := h.d.Services.Contacts.Imports(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	rows := make([]contactImportJSON, 0, len(recs))
	for _, rec := range recs {
		rows = append(rows, contactImportOut(rec))
	}
	writeJSON(w, http.StatusOK, contactImportList{sdkList: listOf(rows)})
	return nil
}

func (h *handler) getContactImport(w http.ResponseWriter, r *http.Request) error {
	rec, err := h.d.Services.Contacts.ImportByID(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactImportOut(rec))
	return nil
}

// clipText shortens what a caller sent before an error message repeats it.
func clipText(s string) string {
	if len(s) > 60 {
		return strings.ToValidUTF8(s[:60], "") + "…"
	}
	return s
}
