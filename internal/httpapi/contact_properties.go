package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
)

// Contact properties in the Resend SDKs' shapes (/v1/contact-properties):
// declared contact attributes with a type and a fallback value. The spec
// has no such route, so the answers are the SDKs' own (a delete answers
// deleted: true).

type createContactPropertyRequest struct {
	Key           *string         `json:"key"`  // required
	Type          *string         `json:"type"` // required: string or number
	FallbackValue json.RawMessage `json:"fallback_value"`
}

type patchContactPropertyRequest struct {
	FallbackValue json.RawMessage `json:"fallback_value"` // null clears it
}

type contactPropertyJSON struct {
	Object        string          `json:"object"`
	ID            string          `json:"id"`
	Key           string          `json:"key"`
	Type          string          `json:"type"`
	FallbackValue json.RawMessage `json:"fallback_value"` // a string, a number or null, as the type says
	CreatedAt     string          `json:"created_at"`
	UpdatedAt     string          `json:"updated_at"`
}

type contactPropertyList struct {
	Object  string                `json:"object"`
	HasMore bool                  `json:"has_more"`
	Data    []contactPropertyJSON `json:"data"`
}

type contactPropertyDeleted struct {
	Object  string `json:"object"`
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

func contactPropertyOut(p contacts.Property) contactPropertyJSON {
	fb := json.RawMessage("null")
	if p.Fallback != nil {
		if p.Type == contacts.PropertyNumber {
			fb = json.RawMessage(*p.Fallback)
		} else {
			fb, _ = json.Marshal(*p.Fallback)
		}
	}
	return contactPropertyJSON{Object: "contact_property", ID: p.ID, Key: p.Key, Type: p.Type, FallbackValue: fb,
		CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt)}
}

// fallbackValue reads fallback_value: absent or null is none, else a
// string or a number (its spelling kept).
func fallbackValue(raw json.RawMessage) (*contacts.Value, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &contacts.Value{Text: s}, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if f, err := n.Float64(); err == nil {
			return &contacts.Value{Text: strconv.FormatFloat(f, 'f', -1, 64), Number: true}, nil
		}
	}
	return nil, apierr.InvalidRequest("fallback_value must be a string, a number or null.")
}

func (h *handler) createContactProperty(w http.ResponseWriter, r *http.Request) error {
	var req createContactPropertyRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Key == nil || *req.Key == "" {
		return apierr.InvalidRequest("key is required.")
	}
	if req.Type == nil {
		return apierr.InvalidRequest("type is required: string or number.")
	}
	fb, err := fallbackValue(req.FallbackValue)
	if err != nil {
		return err
	}
	p, err := h.d.Services.Contacts.CreateProperty(r.Context(), apiKey(r).WorkspaceID, *req.Key, *req.Type, fb)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, contactPropertyOut(p))
	return nil
}

func (h *handler) listContactProperties(w http.ResponseWriter, r *http.Request) error {
	ps, err := h.d.Services.Contacts.Properties(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := contactPropertyList{Object: "list", Data: make([]contactPropertyJSON, 0, len(ps))}
	for _, p := range ps {
		out.Data = append(out.Data, contactPropertyOut(p))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getContactProperty(w http.ResponseWriter, r *http.Request) error {
	p, err := h.d.Services.Contacts.Property(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactPropertyOut(p))
	return nil
}

func (h *handler) patchContactProperty(w http.ResponseWriter, r *http.Request) error {
	var req patchContactPropertyRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.FallbackValue == nil {
		return apierr.InvalidRequest("fallback_value is required (null removes the fallback); key and type do not change.")
	}
	fb, err := fallbackValue(req.FallbackValue)
	if err != nil {
		return err
	}
	p, err := h.d.Services.Contacts.SetPropertyFallback(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), fb)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactPropertyOut(p))
	return nil
}

// deleteContactProperty removes the declaration; contacts keep their values.
func (h *handler) deleteContactProperty(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.d.Services.Contacts.DeleteProperty(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactPropertyDeleted{Object: "contact_property", ID: id, Deleted: true})
	return nil
}
