package dashboard

import (
	"encoding/json"
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/segments"
)

// Segments: the list with a form to add one (its rules as the API's JSON),
// and delete. Each as the /v1 route does.

type segmentsView struct {
	Segments  []segments.Segment
	Audiences []contacts.Audience
}

func (x *Dashboard) segments(w http.ResponseWriter, r *http.Request, s *session) error {
	ss, err := x.d.Segments.List(r.Context(), s.key.WorkspaceID, "")
	if err != nil {
		return err
	}
	as, err := x.d.Contacts.Audiences(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "segments", segmentsView{Segments: ss, Audiences: as})
	return nil
}

// createSegment is POST /v1/segments; the rules field is the API's rules
// array as JSON, empty for none.
func (x *Dashboard) createSegment(w http.ResponseWriter, r *http.Request, s *session) error {
	f := r.PostForm
	var rules json.RawMessage
	if raw := strings.TrimSpace(f.Get("rules")); raw != "" {
		if !json.Valid([]byte(raw)) {
			return apierr.InvalidRequest("The rules are not valid JSON: give a list such as [{\"field\": \"tag\", \"op\": \"has\", \"value\": \"vip\"}].")
		}
		rules = json.RawMessage(raw)
	}
	if _, err := x.d.Segments.Create(r.Context(), s.key.WorkspaceID, segments.Input{Name: f.Get("name"), AudienceID: f.Get("audience_id"),
		Match: f.Get("match"), Rules: rules, Description: strings.TrimSpace(f.Get("description"))}); err != nil {
		return err
	}
	return redirect(w, r, "/segments?ok=segment")
}

func (x *Dashboard) confirmDeleteSegment(w http.ResponseWriter, r *http.Request, s *session) error {
	sg, err := x.d.Segments.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"), false)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Delete the segment " + sg.Name + "?",
		Text:   "Only the segment goes: its contacts stay. Drafts that name it must choose another before they send.",
		Action: "/segments/" + sg.ID + "/delete", Button: "Delete segment", Back: "/segments"})
	return nil
}

func (x *Dashboard) deleteSegment(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.d.Segments.Delete(r.Context(), s.key.WorkspaceID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/segments?ok=segment-deleted")
}
