package httpapi

import (
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/inbound"
)

type mailboxJSON struct {
	ID          string `json:"id"`
	Address     string `json:"address"`
	Name        string `json:"name"`
	DomainID    string `json:"domain_id"`
	CreatedAt   string `json:"created_at"`
	UnreadCount int    `json:"unread_count"`
}

type mailboxList struct {
	Mailboxes []mailboxJSON `json:"mailboxes"`
	listMeta
}

type createMailboxRequest struct {
	Address   *string `json:"address"`
	LocalPart *string `json:"local_part"`
	Name      *string `json:"name"`
}

type mailboxDeletedJSON struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

type identityJSON struct {
	KeyID   string         `json:"key_id"`
	Mailbox *mailboxJSON   `json:"mailbox"`
	Rules   []inbound.Rule `json:"rules"`
}

type setRulesRequest struct {
	Rules *[]inbound.Rule `json:"rules"`
}

func mailboxOut(m *inbound.Mailbox) mailboxJSON {
	return mailboxJSON{ID: m.ID, Address: m.Address, Name: m.Name, DomainID: m.DomainID, CreatedAt: ts(m.CreatedAt), UnreadCount: m.UnreadCount}
}

func (h *handler) listMailboxes(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	k := apiKey(r)
	ms, err := h.d.Services.Inbound.Mailboxes(r.Context(), k.WorkspaceID, k.MailboxID)
	if err != nil {
		return err
	}
	out := make([]mailboxJSON, 0, len(ms))
	for i := range ms {
		out = append(out, mailboxOut(&ms[i]))
	}
	writeJSON(w, http.StatusOK, mailboxList{Mailboxes: out})
	return nil
}

func (h *handler) createMailbox(w http.ResponseWriter, r *http.Request) error {
	var req createMailboxRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	k := apiKey(r)
	if k.MailboxID != "" {
		return errBoundKeyCreatesNoMailbox()
	}
	var address string
	switch {
	case req.Address != nil && req.LocalPart != nil:
		return apierr.InvalidRequest("Give address or local_part, not both.")
	case req.Address != nil:
		address = *req.Address
	case req.LocalPart != nil:
		address = *req.LocalPart
		if address == "" || containsAt(address) {
			return apierr.InvalidRequest("local_part must be the part before the @, without it.")
		}
	default:
		return apierr.InvalidRequest("address (or local_part, on the workspace subdomain) is required.")
	}
	if req.Address != nil && !containsAt(address) {
		return apierr.InvalidRequest("address must be a full address; use local_part for one on the workspace subdomain.")
	}
	name := ""
	if req.Name != nil {
		name = *req.Name
	}
	m, err := h.d.Services.Inbound.CreateMailbox(r.Context(), k.WorkspaceID, address, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, mailboxOut(m))
	return nil
}

func containsAt(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '@' {
			return true
		}
	}
	return false
}

func (h *handler) getMailbox(w http.ResponseWriter, r *http.Request) error {
	k := apiKey(r)
	m, err := h.d.Services.Inbound.Mailbox(r.Context(), k.WorkspaceID, k.MailboxID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailboxOut(m))
	return nil
}

func (h *handler) deleteMailbox(w http.ResponseWriter, r *http.Request) error {
	k := apiKey(r)
	id := r.PathValue("id")
	if err := h.d.Services.Inbound.DeleteMailbox(r.Context(), k.WorkspaceID, k.MailboxID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailboxDeletedJSON{ID: id, Deleted: true})
	return nil
}

func identityOut(id *inbound.Identity) identityJSON {
	out := identityJSON{KeyID: id.KeyID, Rules: id.Rules}
	if id.Mailbox != nil {
		m := mailboxOut(id.Mailbox)
		out.Mailbox = &m
	}
	if out.Rules == nil {
		out.Rules = []inbound.Rule{}
	}
	return out
}

func (h *handler) getIdentity(w http.ResponseWriter, r *http.Request) error {
	k := apiKey(r)
	id, err := h.d.Services.Inbound.Identity(r.Context(), k.WorkspaceID, k.ID, k.MailboxID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, identityOut(id))
	return nil
}

func (h *handler) setIdentityRules(w http.ResponseWriter, r *http.Request) error {
	var req setRulesRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Rules == nil {
		return apierr.InvalidRequest("rules is required (an empty list clears them).")
	}
	k := apiKey(r)
	id, err := h.d.Services.Inbound.SetRules(r.Context(), k.WorkspaceID, k.ID, k.MailboxID, *req.Rules)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, identityOut(id))
	return nil
}

// errBoundKeyCreatesNoMailbox refuses a mailbox (or inbox) to a key bound to one.
func errBoundKeyCreatesNoMailbox() error {
	return apierr.Forbidden("insufficient_scope", "A key bound to a mailbox cannot create mailboxes.").
		WithNext("Use a key that is not bound to a mailbox.")
}
