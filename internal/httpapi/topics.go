package httpapi

import (
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/topics"
)

type createTopicRequest struct {
	DefaultOptIn        *bool   `json:"default_opt_in"`       // default true
	DefaultSubscription *string `json:"default_subscription"` // Resend's spelling: opt_in or opt_out
	Description         *string `json:"description"`
	Key                 *string `json:"key"`      // derived from name when omitted
	Name                *string `json:"name"`     // required
	Required            *bool   `json:"required"` // default false
}

type patchTopicRequest struct {
	Archived            *bool   `json:"archived"` // false restores an archived topic
	DefaultSubscription *string `json:"default_subscription"`
	ID                  *string `json:"id"` // the Node SDK repeats the path's id
	DefaultOptIn        *bool   `json:"default_opt_in"`
	Description         *string `json:"description"`
	Key                 *string `json:"key"` // immutable: accepted only unchanged
	Name                *string `json:"name"`
	Required            *bool   `json:"required"`
}

type topicPreferencesRequest struct {
	Email      *string `json:"email"` // required
	Source     *string `json:"source"`
	Subscribed *bool   `json:"subscribed"` // omitted: ask, don't write
	Topic      *string `json:"topic"`      // key or id; omitted: every topic
}

type topicJSON struct {
	Archived     bool    `json:"archived"`
	ArchivedAt   *string `json:"archived_at"`
	CreatedAt    string  `json:"created_at"`
	DefaultOptIn bool    `json:"default_opt_in"`
	Description  string  `json:"description"`
	ID           string  `json:"id"`
	Key          string  `json:"key"`
	Name         string  `json:"name"`
	Required     bool    `json:"required"`
	UpdatedAt    string  `json:"updated_at"`
	// Resend's reading of default_opt_in.
	DefaultSubscription string `json:"default_subscription"`
}

type topicList struct {
	HasMore    bool        `json:"has_more"`
	NextCursor *string     `json:"next_cursor"`
	Topics     []topicJSON `json:"topics"`
}

type topicPreferenceJSON struct {
	DefaultOptIn bool    `json:"default_opt_in"`
	Description  string  `json:"description"`
	Key          string  `json:"key"`
	Name         string  `json:"name"`
	Required     bool    `json:"required"`
	Source       *string `json:"source"` // null: the topic's default applies
	Subscribed   bool    `json:"subscribed"`
	TopicID      string  `json:"topic_id"`
	UpdatedAt    *string `json:"updated_at"`
}

type topicPreferencesJSON struct {
	Email         string                `json:"email"`
	PreferenceURL string                `json:"preference_url"`
	Preferences   []topicPreferenceJSON `json:"preferences"`
}

func topicOut(t topics.Topic) topicJSON {
	sub := "opt_out"
	if t.DefaultOptIn {
		sub = "opt_in"
	}
	return topicJSON{ID: t.ID, Key: t.Key, Name: t.Name, Description: t.Description, DefaultOptIn: t.DefaultOptIn,
		Required: t.Required, Archived: t.Archived(), ArchivedAt: tsPtr(t.ArchivedAt), CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt),
		DefaultSubscription: sub}
}

func preferencesOut(p topics.Preferences) topicPreferencesJSON {
	out := topicPreferencesJSON{Email: p.Email, PreferenceURL: p.PreferenceURL, Preferences: make([]topicPreferenceJSON, 0, len(p.Preferences))}
	for _, x := range p.Preferences {
		j := topicPreferenceJSON{TopicID: x.Topic.ID, Key: x.Topic.Key, Name: x.Topic.Name, Description: x.Topic.Description,
			DefaultOptIn: x.Topic.DefaultOptIn, Required: x.Topic.Required, Subscribed: x.Subscribed, UpdatedAt: tsPtr(x.UpdatedAt)}
		if x.Source != "" {
			src := x.Source
			j.Source = &src
		}
		out.Preferences = append(out.Preferences, j)
	}
	return out
}

func (h *handler) listTopics(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	archived := false
	switch v := r.URL.Query().Get("include_archived"); v {
	case "", "false", "0":
	case "true", "1":
		archived = true
	default:
		return apierr.InvalidRequest("include_archived must be true or false, not %q.", v)
	}
	list, err := h.d.Services.Topics.List(r.Context(), apiKey(r).WorkspaceID, archived)
	if err != nil {
		return err
	}
	out := topicList{Topics: make([]topicJSON, 0, len(list))}
	for _, t := range list {
		out.Topics = append(out.Topics, topicOut(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// defaultSubscription reads Resend's default_subscription into
// default_opt_in; both given must agree.
func defaultSubscription(optIn **bool, sub *string) error {
	if sub == nil {
		return nil
	}
	var v bool
	switch *sub {
	case "opt_in":
		v = true
	case "opt_out":
	default:
		return apierr.InvalidRequest("default_subscription must be opt_in or opt_out.")
	}
	if *optIn != nil && **optIn != v {
		return apierr.InvalidRequest("default_subscription and default_opt_in disagree; pass one.")
	}
	*optIn = &v
	return nil
}

func (h *handler) createTopic(w http.ResponseWriter, r *http.Request) error {
	var req createTopicRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return apierr.InvalidRequest("name is required.")
	}
	if err := defaultSubscription(&req.DefaultOptIn, req.DefaultSubscription); err != nil {
		return err
	}
	t, err := h.d.Services.Topics.Create(r.Context(), apiKey(r).WorkspaceID, topics.NewTopic{Name: *req.Name, Key: str(req.Key),
		Description: str(req.Description), DefaultOptIn: req.DefaultOptIn, Required: req.Required})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, topicOut(t))
	return nil
}

func (h *handler) getTopic(w http.ResponseWriter, r *http.Request) error {
	t, err := h.d.Services.Topics.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, topicOut(t))
	return nil
}

func (h *handler) patchTopic(w http.ResponseWriter, r *http.Request) error {
	var req patchTopicRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if err := defaultSubscription(&req.DefaultOptIn, req.DefaultSubscription); err != nil {
		return err
	}
	if req.ID != nil && *req.ID != r.PathValue("id") {
		return apierr.InvalidRequest("id does not match the topic in the path.")
	}
	ws := apiKey(r).WorkspaceID
	if req.Key != nil {
		cur, err := h.d.Services.Topics.Get(r.Context(), ws, r.PathValue("id"))
		if err != nil {
			return err
		}
		if *req.Key != cur.Key {
			return apierr.InvalidRequest("key is immutable; PATCH changes everything but the key.").
				WithNext("Create a new topic for a new key, and archive this one.")
		}
	}
	t, err := h.d.Services.Topics.Update(r.Context(), ws, r.PathValue("id"), topics.Patch{Name: req.Name, Description: req.Description,
		DefaultOptIn: req.DefaultOptIn, Required: req.Required, Archived: req.Archived})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, topicOut(t))
	return nil
}

func (h *handler) archiveTopic(w http.ResponseWriter, r *http.Request) error {
	t, err := h.d.Services.Topics.Archive(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, topicOut(t))
	return nil
}

func (h *handler) getTopicPreferences(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	p, err := h.d.Services.Topics.Preferences(r.Context(), apiKey(r).WorkspaceID, q.Get("email"), q.Get("topic"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, preferencesOut(p))
	return nil
}

func (h *handler) postTopicPreferences(w http.ResponseWriter, r *http.Request) error {
	var req topicPreferencesRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Email == nil {
		return apierr.InvalidRequest("email is required.")
	}
	ws := apiKey(r).WorkspaceID
	var p topics.Preferences
	var err error
	if req.Subscribed == nil {
		p, err = h.d.Services.Topics.Preferences(r.Context(), ws, *req.Email, str(req.Topic))
	} else {
		p, err = h.d.Services.Topics.SetPreference(r.Context(), ws, *req.Email, str(req.Topic), *req.Subscribed, str(req.Source))
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, preferencesOut(p))
	return nil
}
