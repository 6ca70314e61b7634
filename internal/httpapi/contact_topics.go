package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"mailroom/internal/apierr"
)

// A contact's topics as the Resend SDKs read and set them, over the topic
// preferences of its address (GET/POST /v1/topics/preferences).

type contactTopicJSON struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Subscription string `json:"subscription"` // opt_in or opt_out
}

type contactTopicList struct {
	Object  string             `json:"object"`
	HasMore bool               `json:"has_more"`
	Data    []contactTopicJSON `json:"data"`
}

type contactTopicChange struct {
	ID           *string `json:"id"`
	Subscription *string `json:"subscription"`
}

type contactRefJSON struct {
	ID string `json:"id"`
}

// maxTopicChanges caps one PATCH's entries.
const maxTopicChanges = 100

func (h *handler) getContactTopics(w http.ResponseWriter, r *http.Request) error {
	ws := apiKey(r).WorkspaceID
	c, err := h.d.Services.Contacts.Get(r.Context(), ws, r.PathValue("id"))
	if err != nil {
		return err
	}
	p, err := h.d.Services.Topics.Preferences(r.Context(), ws, c.Email, "")
	if err != nil {
		return err
	}
	out := contactTopicList{Object: "list", Data: make([]contactTopicJSON, 0, len(p.Preferences))}
	for _, x := range p.Preferences {
		sub := "opt_out"
		if x.Subscribed {
			sub = "opt_in"
		}
		out.Data = append(out.Data, contactTopicJSON{ID: x.Topic.ID, Name: x.Topic.Name, Description: x.Topic.Description, Subscription: sub})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// patchContactTopics takes the SDKs' bare array [{ id, subscription }]; every
// entry is checked (topic on the workspace, opt_in or opt_out) before any
// is written.
func (h *handler) patchContactTopics(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	var changes []contactTopicChange
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&changes); err != nil {
		return apierr.InvalidRequest("The body must be an array of { \"id\": topic id, \"subscription\": \"opt_in\" | \"opt_out\" }.")
	}
	if len(changes) == 0 || len(changes) > maxTopicChanges {
		return apierr.InvalidRequest("Send 1 to %d topic changes.", maxTopicChanges)
	}
	ws := apiKey(r).WorkspaceID
	c, err := h.d.Services.Contacts.Get(r.Context(), ws, r.PathValue("id"))
	if err != nil {
		return err
	}
	for i, ch := range changes {
		if ch.ID == nil || ch.Subscription == nil || (*ch.Subscription != "opt_in" && *ch.Subscription != "opt_out") {
			return apierr.InvalidRequest("[%d] needs id and subscription (opt_in or opt_out).", i)
		}
		if _, err := h.d.Services.Topics.Get(r.Context(), ws, *ch.ID); err != nil {
			return err
		}
	}
	for _, ch := range changes {
		if _, err := h.d.Services.Topics.SetPreference(r.Context(), ws, c.Email, *ch.ID, *ch.Subscription == "opt_in", ""); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, contactRefJSON{ID: c.ID})
	return nil
}
