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
	DomainID   *string  `json:"domain_id"`  // the domain a sending key is restricted to, or null
	Key        string   `json:"key,omitempty"`
	Token      string   `json:"token,omitempty"` // the key again, where the Resend SDKs read it
}

// apiKeyList carries the keys twice: api_keys (the spec) and data, where
// the Resend SDKs read a list (docs/decisions.md).
type apiKeyList struct {
	APIKeys []apiKeyJSON `json:"api_keys"`
	Data    []apiKeyJSON `json:"data"`
	listMeta
}

type createAPIKeyRequest struct {
	Name      string          `json:"name"`
	Scopes    json.RawMessage `json:"scopes"`     // absent, null or a list: the service tells them apart
	MailboxID *string         `json:"mailbox_id"` // binds the key to this mailbox
	// Resend's spelling: full_access or sending_access, mapped onto scopes
	// (which win when both are given); domain_id is not kept (docs/decisions.md).
	Permission *string `json:"permission"`
	DomainID   *string `json:"domain_id"`
	DomainId   *string `json:"domainId"` // the Node SDK sends its option's name as is
}

// permissionScopes maps Resend's permission onto scopes.
func permissionScopes(p string) ([]string, error) {
	switch p {
	case "full_access":
		return workspaces.AllScopes, nil
	case "sending_access":
		return []string{workspaces.ScopeSend}, nil
	}
	return nil, apierr.InvalidRequest("permission must be full_access or sending_access.")
}

func apiKeyOut(k *workspaces.Key) apiKeyJSON {
	out := apiKeyJSON{ID: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: ts(k.CreatedAt)}
	if k.MailboxID != "" {
		m := k.MailboxID
		out.MailboxID = &m
	}
	if k.DomainID != "" {
		d := k.DomainID
		out.DomainID = &d
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
	if err := h.pager.whole(r); err != nil {
		return err
	}
	keys, err := h.d.Workspaces.ListKeys(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID)
	if err != nil {
		return err
	}
	out := make([]apiKeyJSON, 0, len(keys))
	for i := range keys {
		out = append(out, apiKeyOut(&keys[i]))
	}
	writeJSON(w, http.StatusOK, apiKeyList{APIKeys: out, Data: out})
	return nil
}

func (h *handler) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	var req createAPIKeyRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.DomainId != nil {
		if req.DomainID != nil && *req.DomainID != *req.DomainId {
			return apierr.InvalidRequest("domain_id and domainId differ; pass one.")
		}
		req.DomainID = req.DomainId
	}
	caller := apiKey(r)
	var scopes []string
	given := len(req.Scopes) > 0 && string(req.Scopes) != "null"
	if given {
		if err := json.Unmarshal(req.Scopes, &scopes); err != nil {
			return jsonError(&json.UnmarshalTypeError{Field: "scopes", Value: "scopes", Type: typeOfStrings})
		}
	} else if req.Permission != nil {
		var err error
		if scopes, err = permissionScopes(*req.Permission); err != nil {
			return err
		}
		given = true
	}
	var domain workspaces.KeyDomain
	if caller.DomainID != "" && req.DomainID == nil {
		domain = workspaces.KeyDomain{ID: caller.DomainID, Name: caller.DomainName} // limited like its maker
	}
	if req.DomainID != nil {
		d, err := h.d.Services.Domains.Get(r.Context(), caller.WorkspaceID, *req.DomainID)
		if err != nil {
			return err
		}
		domain = workspaces.KeyDomain{ID: d.ID, Name: d.Name}
	}
	mailbox := workspaces.KeyMailbox{ID: caller.MailboxID, Address: caller.MailboxAddress} // a bound key makes only keys bound like it
	if req.MailboxID != nil {
		if caller.MailboxID != "" && *req.MailboxID != caller.MailboxID {
			return apierr.NotFound("mailbox")
		}
		m, err := h.d.Services.Inbound.Mailbox(r.Context(), caller.WorkspaceID, caller.MailboxID, *req.MailboxID)
		if err != nil {
			return err
		}
		mailbox = workspaces.KeyMailbox{ID: m.ID, Address: m.Address}
	}
	k, secret, err := h.d.Workspaces.CreateDomainKey(r.Context(), caller, caller.WorkspaceID, req.Name, scopes, given, mailbox, domain)
	if err != nil {
		return err
	}
	out := apiKeyOut(k)
	out.Key, out.Token = secret, secret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (h *handler) deleteAPIKey(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.d.Workspaces.DeleteKey(r.Context(), apiKey(r).WorkspaceID, apiKey(r).MailboxID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedJSON{Deleted: id})
	return nil
}

var typeOfStrings = reflectTypeOf[[]string]()
