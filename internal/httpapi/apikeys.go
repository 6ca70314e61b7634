package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/workspaces"
)

type apiKeyJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Scopes     []string `json:"scopes"`
	CreatedAt  string   `json:"created_at"`
	LastUsedAt *string  `json:"last_used_at"`
	MailboxID  *string  `json:"mailbox_id"` // the mailbox the key is bound to, or null
	Key        string   `json:"key,omitempty"`
}

type apiKeyList struct {
	APIKeys []apiKeyJSON `json:"api_keys"`
	listMeta
}

type createAPIKeyRequest struct {
	Name      string          `json:"name"`
	Scopes    json.RawMessage `json:"scopes"`     // absent, null or a list: the service tells them apart
	MailboxID *string         `json:"mailbox_id"` // binds the key to this mailbox
}

func apiKeyOut(k *workspaces.Key) apiKeyJSON {
	out := apiKeyJSON{ID: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: ts(k.CreatedAt)}
	if k.MailboxID != "" {
		m := k.MailboxID
		out.MailboxID = &m
	}
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
	caller := apiKey(r)
	mailboxID := caller.MailboxID // a bound key makes only keys bound like it
	if req.MailboxID != nil {
		if caller.MailboxID != "" && *req.MailboxID != caller.MailboxID {
			return apierr.NotFound("mailbox")
		}
		m, err := h.d.Services.Inbound.Mailbox(r.Context(), caller.WorkspaceID, caller.MailboxID, *req.MailboxID)
		if err != nil {
			return err
		}
		mailboxID = m.ID
	}
	k, secret, err := h.d.Workspaces.CreateKey(r.Context(), caller.WorkspaceID, req.Name, scopes, given, mailboxID)
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
