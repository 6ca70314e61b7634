package httpapi

import (
	"encoding/json"
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
)

// nullable is a PATCH field that tells absent (Set false) from null (Set,
// Value nil) from a value.
type nullable[T any] struct {
	Set   bool
	Value *T
}

func (n *nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = &v
	return nil
}

func (n nullable[T]) opt() contacts.Opt[T] { return contacts.Opt[T]{Set: n.Set, Value: n.Value} }

type createAudienceRequest struct {
	Name        *string `json:"name"` // required
	Description *string `json:"description"`
}

type patchAudienceRequest struct {
	Name                *string          `json:"name"`
	Description         *string          `json:"description"`
	RequireDoubleOptIn  nullable[bool]   `json:"require_double_opt_in"` // null: the workspace default
	ConfirmationSubject nullable[string] `json:"confirmation_subject"`  // null: the default
	ConfirmationBody    nullable[string] `json:"confirmation_body"`
}

// audienceJSON is the audience as listed; audienceFullJSON the single read.
type audienceJSON struct {
	CreatedAt   string `json:"created_at"`
	Description string `json:"description"`
	ID          string `json:"id"`
	Name        string `json:"name"`
}

type audienceFullJSON struct {
	audienceJSON
	ConfirmationBody    *string `json:"confirmation_body"`
	ConfirmationSubject *string `json:"confirmation_subject"`
	DoubleOptInSource   string  `json:"double_opt_in_source"`
	RequireDoubleOptIn  bool    `json:"require_double_opt_in"`
}

type audienceList struct {
	Audiences  []audienceJSON `json:"audiences"`
	HasMore    bool           `json:"has_more"`
	NextCursor *string        `json:"next_cursor"`
}

func audienceOut(a contacts.Audience) audienceJSON {
	return audienceJSON{ID: a.ID, Name: a.Name, Description: a.Description, CreatedAt: ts(a.CreatedAt)}
}

func audienceFullOut(a contacts.Audience) audienceFullJSON {
	doi, src := a.DoubleOptIn()
	return audienceFullJSON{audienceJSON: audienceOut(a), RequireDoubleOptIn: doi, DoubleOptInSource: src,
		ConfirmationSubject: a.ConfirmationSubject, ConfirmationBody: a.ConfirmationBody}
}

// The audience list is the whole collection: has_more false, next_cursor null.
func (h *handler) listAudiences(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	as, err := h.d.Services.Contacts.Audiences(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := make([]audienceJSON, 0, len(as))
	for _, a := range as {
		out = append(out, audienceOut(a))
	}
	writeJSON(w, http.StatusOK, audienceList{Audiences: out})
	return nil
}

func (h *handler) createAudience(w http.ResponseWriter, r *http.Request) error {
	var req createAudienceRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return apierr.InvalidRequest("name is required.")
	}
	desc := ""
	if req.Description != nil {
		desc = *req.Description
	}
	a, err := h.d.Services.Contacts.CreateAudience(r.Context(), apiKey(r).WorkspaceID, *req.Name, desc)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, audienceFullOut(a))
	return nil
}

func (h *handler) getAudience(w http.ResponseWriter, r *http.Request) error {
	a, err := h.d.Services.Contacts.Audience(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, audienceFullOut(a))
	return nil
}

func (h *handler) patchAudience(w http.ResponseWriter, r *http.Request) error {
	var req patchAudienceRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	p := contacts.AudiencePatch{Name: req.Name, Description: req.Description, RequireDoubleOptIn: req.RequireDoubleOptIn.opt(),
		ConfirmationSubject: req.ConfirmationSubject.opt(), ConfirmationBody: req.ConfirmationBody.opt()}
	a, err := h.d.Services.Contacts.UpdateAudience(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, audienceFullOut(a))
	return nil
}

func (h *handler) deleteAudience(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.d.Services.Contacts.DeleteAudience(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactDeleted{ID: id, Deleted: true})
	return nil
}
