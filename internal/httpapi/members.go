package httpapi

import (
	"net/http"

	"mailroom/internal/contacts"
)

type patchMemberRequest struct {
	Attributes map[string]*string `json:"attributes"` // merge patch: null clears a name
	Subscribed *bool              `json:"subscribed"` // wins over status
	Status     *string            `json:"status"`
}

type memberJSON struct {
	Attributes map[string]string `json:"attributes"`
	ContactID  string            `json:"contact_id"`
	CreatedAt  string            `json:"created_at"`
	Email      string            `json:"email"`
	ID         string            `json:"id"`
	Status     string            `json:"status"`
	UpdatedAt  string            `json:"updated_at"`
}

type memberList struct {
	ContactCount    int          `json:"contact_count"`
	Contacts        []memberJSON `json:"contacts"`
	HasMore         bool         `json:"has_more"`
	NextAfter       *string      `json:"next_after"` // deprecated spelling of next_cursor
	NextCursor      *string      `json:"next_cursor"`
	SubscribedCount int          `json:"subscribed_count"`
}

func memberOut(m contacts.Member) memberJSON {
	return memberJSON{ID: m.ID, ContactID: m.ContactID, Email: m.Email, Status: m.Status, Attributes: m.Attributes,
		CreatedAt: ts(m.CreatedAt), UpdatedAt: ts(m.UpdatedAt)}
}

func (h *handler) listMembers(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 100, 1000, true)
	if err != nil {
		return err
	}
	var pos *contacts.Position
	if pg.After != nil {
		pos = &contacts.Position{At: pg.After.At, ID: pg.After.ID}
	}
	ms, counts, err := h.d.Services.Contacts.Members(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"),
		contacts.MemberFilter{Status: r.URL.Query().Get("status")}, pg.Limit+1, pg.Offset, pos)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(ms), func(i int) Cursor {
		return Cursor{At: ms[i].CreatedAt.UnixMilli(), ID: ms[i].ID}
	})
	out := make([]memberJSON, 0, n)
	for _, m := range ms[:n] {
		out = append(out, memberOut(m))
	}
	writeJSON(w, http.StatusOK, memberList{Contacts: out, ContactCount: counts.Contacts, SubscribedCount: counts.Subscribed,
		HasMore: meta.HasMore, NextCursor: meta.NextCursor, NextAfter: meta.NextCursor})
	return nil
}

func (h *handler) getMember(w http.ResponseWriter, r *http.Request) error {
	m, err := h.d.Services.Contacts.Member(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), r.PathValue("member"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memberOut(m))
	return nil
}

func (h *handler) patchMember(w http.ResponseWriter, r *http.Request) error {
	var req patchMemberRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	m, err := h.d.Services.Contacts.UpdateMember(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), r.PathValue("member"),
		contacts.MemberPatch{Attributes: req.Attributes, Subscribed: req.Subscribed, Status: req.Status})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memberOut(m))
	return nil
}

func (h *handler) deleteMember(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("member")
	if err := h.d.Services.Contacts.DeleteMember(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactDeleted{ID: id, Deleted: true})
	return nil
}
