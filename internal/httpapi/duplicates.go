package httpapi

import (
	"net/http"

	"mailroom/internal/apierr"
)

type duplicatePairJSON struct {
	Contacts []contactJSON `json:"contacts"` // the older first
	Reason   string        `json:"reason"`
}

type duplicatesJSON struct {
	HasMore    bool                `json:"has_more"`
	NextCursor *string             `json:"next_cursor"` // always null: a ranking; a larger limit shows more
	Pairs      []duplicatePairJSON `json:"pairs"`
}

type mergeRequest struct {
	SurvivorID *string `json:"survivor_id"`
	LoserID    *string `json:"loser_id"`
}

type mergeJSON struct {
	LoserID  string      `json:"loser_id"`
	Merged   bool        `json:"merged"`
	Survivor contactJSON `json:"survivor"`
}

func (h *handler) listDuplicates(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 100, 1000, false)
	if err != nil {
		return err
	}
	pairs, more, err := h.d.Services.Contacts.Duplicates(r.Context(), apiKey(r).WorkspaceID, pg.Limit)
	if err != nil {
		return err
	}
	out := duplicatesJSON{HasMore: more, Pairs: make([]duplicatePairJSON, 0, len(pairs))}
	for _, p := range pairs {
		out.Pairs = append(out.Pairs, duplicatePairJSON{Contacts: []contactJSON{contactOut(p.A), contactOut(p.B)}, Reason: p.Reason})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) mergeDuplicates(w http.ResponseWriter, r *http.Request) error {
	var req mergeRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.SurvivorID == nil || req.LoserID == nil {
		return apierr.InvalidRequest("survivor_id and loser_id are required.")
	}
	c, err := h.d.Services.Contacts.Merge(r.Context(), apiKey(r).WorkspaceID, *req.SurvivorID, *req.LoserID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mergeJSON{Survivor: contactOut(c), LoserID: *req.LoserID, Merged: true})
	return nil
}
