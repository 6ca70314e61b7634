package httpapi

import (
	"encoding/json"
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/rules"
	"mailroom/internal/segments"
)

type createSegmentRequest struct {
	Name        *string         `json:"name"` // required
	AudienceID  *string         `json:"audience_id"`
	Match       *string         `json:"match"`
	Rules       json.RawMessage `json:"rules"`
	Description *string         `json:"description"`
}

type patchSegmentRequest struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Match       *string         `json:"match"`
	Rules       json.RawMessage `json:"rules"`
}

type segmentJSON struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Describes   string       `json:"describes"`
	MemberCount int          `json:"member_count"`
	CountedAt   string       `json:"counted_at"`
	AudienceID  *string      `json:"audience_id"`
	Match       string       `json:"match"`
	Rules       []rules.Rule `json:"rules"`
	Description string       `json:"description"`
	CreatedAt   string       `json:"created_at"`
	UpdatedAt   string       `json:"updated_at"`
}

type segmentList struct {
	Segments   []segmentJSON `json:"segments"`
	HasMore    bool          `json:"has_more"`
	NextCursor *string       `json:"next_cursor"`
}

type segmentMemberJSON struct {
	ID         string            `json:"id"` // contact_id again, where the Resend SDKs' contacts.list reads it
	ContactID  string            `json:"contact_id"`
	MemberID   *string           `json:"member_id"`
	Email      string            `json:"email"`
	FirstName  string            `json:"first_name"`
	LastName   string            `json:"last_name"`
	Attributes map[string]string `json:"attributes"`
	Tags       []string          `json:"tags"`
	Status     *string           `json:"status"`
	CreatedAt  string            `json:"created_at"`
}

type segmentMembers struct {
	SegmentID  string              `json:"segment_id"`
	Total      int                 `json:"total"`
	Members    []segmentMemberJSON `json:"members"`
	HasMore    bool                `json:"has_more"`
	NextCursor *string             `json:"next_cursor"`
	NextAfter  *string             `json:"next_after"` // deprecated spelling of next_cursor
}

func segmentOut(s segments.Segment) segmentJSON {
	out := segmentJSON{ID: s.ID, Name: s.Name, Describes: s.Describes(), MemberCount: s.MemberCount, CountedAt: ts(s.CountedAt),
		Match: s.Match, Rules: s.Rules(), Description: s.Description, CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt)}
	if s.AudienceID != "" {
		out.AudienceID = &s.AudienceID
	}
	return out
}

func (h *handler) createSegment(w http.ResponseWriter, r *http.Request) error {
	var req createSegmentRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return apierr.InvalidRequest("name is required.")
	}
	s, err := h.d.Services.Segments.Create(r.Context(), apiKey(r).WorkspaceID, segments.Input{
		Name: *req.Name, AudienceID: str(req.AudienceID), Match: str(req.Match), Rules: req.Rules, Description: str(req.Description)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, segmentOut(s))
	return nil
}

func (h *handler) listSegments(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	segs, err := h.d.Services.Segments.List(r.Context(), apiKey(r).WorkspaceID, r.URL.Query().Get("audience_id"))
	if err != nil {
		return err
	}
	out := make([]segmentJSON, 0, len(segs))
	for _, s := range segs {
		out = append(out, segmentOut(s))
	}
	writeJSON(w, http.StatusOK, segmentList{Segments: out})
	return nil
}

func (h *handler) getSegment(w http.ResponseWriter, r *http.Request) error {
	count := r.URL.Query().Get("count")
	if count != "" && count != "live" && count != "cached" {
		return apierr.InvalidRequest("count must be \"live\" (recount now) or omitted (the cached count).")
	}
	s, err := h.d.Services.Segments.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), count == "live")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, segmentOut(s))
	return nil
}

func (h *handler) patchSegment(w http.ResponseWriter, r *http.Request) error {
	var req patchSegmentRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	s, err := h.d.Services.Segments.Update(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), segments.Patch{
		Name: req.Name, Description: req.Description, Match: req.Match, Rules: req.Rules})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, segmentOut(s))
	return nil
}

func (h *handler) deleteSegment(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.d.Services.Segments.Delete(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactDeleted{ID: id, Deleted: true})
	return nil
}

func (h *handler) listSegmentMembers(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 100, 1000, false)
	if err != nil {
		return err
	}
	mailable := false
	switch v := r.URL.Query().Get("mailable"); v {
	case "", "false":
	case "true":
		mailable = true
	default:
		return apierr.InvalidRequest("mailable must be true or false.")
	}
	after := ""
	if pg.After != nil {
		after = pg.After.ID
	}
	id := r.PathValue("id")
	ps, total, err := h.d.Services.Segments.Members(r.Context(), apiKey(r).WorkspaceID, id, mailable, after, pg.Limit+1)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(ps), func(i int) Cursor { return Cursor{ID: ps[i].ContactID} })
	out := make([]segmentMemberJSON, 0, n)
	for _, p := range ps[:n] {
		out = append(out, segmentMemberOut(p))
	}
	writeJSON(w, http.StatusOK, segmentMembers{SegmentID: id, Total: total, Members: out,
		HasMore: meta.HasMore, NextCursor: meta.NextCursor, NextAfter: meta.NextCursor})
	return nil
}

func segmentMemberOut(p contacts.Person) segmentMemberJSON {
	m := segmentMemberJSON{ID: p.ContactID, ContactID: p.ContactID, Email: p.Email, FirstName: p.FirstName, LastName: p.LastName,
		Attributes: p.Merged(), Tags: p.Tags, CreatedAt: ts(p.CreatedAt)}
	if p.MemberID != "" {
		m.MemberID, m.Status = &p.MemberID, &p.Status
	}
	return m
}

// contactSegmentJSON is a segment as the Resend SDKs list a contact's.
type contactSegmentJSON struct {
	Object string `json:"object"` // segment
	segmentJSON
}

type contactSegmentList struct {
	Object  string               `json:"object"`
	HasMore bool                 `json:"has_more"`
	Data    []contactSegmentJSON `json:"data"`
}

// listContactSegments lists the segments whose rules the contact meets
// (GET /v1/contacts/{id}/segments, the Resend SDKs' contacts.segments.list).
func (h *handler) listContactSegments(w http.ResponseWriter, r *http.Request) error {
	segs, err := h.d.Services.Segments.OfContact(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := contactSegmentList{Object: "list", Data: make([]contactSegmentJSON, 0, len(segs))}
	for _, s := range segs {
		out.Data = append(out.Data, contactSegmentJSON{Object: "segment", segmentJSON: segmentOut(s)})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
