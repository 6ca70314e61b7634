package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"mailroom/internal/workspaces"
)

type apiKeyJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Scopes     []string `json:"scopes"`
	CreatedAt  string   `json:"created_at"`
	LastUsedAt *string  `json:"last_used_at"`
	Key        string   `json:"key,omitempty"`
}

type apiKeyList struct {
	APIKeys []apiKeyJSON `json:"api_keys"`
	listMeta
}

type createAPIKeyRequest struct {
	Name   string          `json:"name"`
	Scopes json.RawMessage `json:"scopes"` // absent, null or a list: the service tells them apart
}

func apiKeyOut(k *workspaces.Key) apiKeyJSON {
	out := apiKeyJSON{ID: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: ts(k.CreatedAt)}
	if k.LastUsedAt != nil {
		s := ts(*k.LastUsedAt)
		out.LastUsedAt = &s
	}
	return out
}

// ts formats a timestamp as RFC 3339 UTC with a Z.
func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := ts(*t)
	return &s
}

func (h *handler) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := h.d.Workspaces.ListKeys(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := make([]apiKeyJSON, 0, len(keys))
	for i := range keys {
		out = append(out, apiKeyOut(&keys[i]))
	}
	writeJSON(w, http.StatusOK, apiKeyList{APIKeys: out})
	return nil
}

func (h *handler) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	var req createAPIKeyRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	var scopes []string
	given := len(req.Scopes) > 0 && string(req.Scopes) != "null"
	if given {
		if err := json.Unmarshal(req.Scopes, &scopes); err != nil {
			return jsonError(&json.UnmarshalTypeError{Field: "scopes", Value: "scopes", Type: typeOfStrings})
		}
	}
	k, secret, err := h.d.Workspaces.CreateKey(r.Context(), apiKey(r).WorkspaceID, req.Name, scopes, given)
	if err != nil {
		return err
	}
	out := apiKeyOut(k)
	out.Key = secret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (h *handler) deleteAPIKey(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.d.Workspaces.DeleteKey(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedJSON{Deleted: id})
	return nil
}

var typeOfStrings = reflectTypeOf[[]string]()
