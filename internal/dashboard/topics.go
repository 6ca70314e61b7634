package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"mailroom/internal/topics"
)

// Topics: the list with a form to add one, a topic's edit form, archive and
// restore (DELETE /v1/topics/{id} archives). Each as the /v1 route does.

func (x *Dashboard) topics(w http.ResponseWriter, r *http.Request, s *session) error {
	ts, err := x.d.Topics.List(r.Context(), s.key.WorkspaceID, true)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "topics", ts)
	return nil
}

// checked is a checkbox's value as a bool.
func checked(r *http.Request, name string) *bool {
	v := r.PostForm.Get(name) == "on"
	return &v
}

// createTopic is POST /v1/topics from the list's form.
func (x *Dashboard) createTopic(w http.ResponseWriter, r *http.Request, s *session) error {
	f := r.PostForm
	t, err := x.d.Topics.Create(r.Context(), s.key.WorkspaceID, topics.NewTopic{Name: strings.TrimSpace(f.Get("name")), Key: strings.TrimSpace(f.Get("key")),
		Description: strings.TrimSpace(f.Get("description")), DefaultOptIn: checked(r, "default_opt_in"), Required: checked(r, "required")})
	if err != nil {
		return err
	}
	return redirect(w, r, "/topics/"+url.PathEscape(t.ID)+"?ok=topic")
}

func (x *Dashboard) topic(w http.ResponseWriter, r *http.Request, s *session) error {
	t, err := x.d.Topics.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "topic", t)
	return nil
}

// saveTopic is PATCH /v1/topics/{id}: everything but the key.
func (x *Dashboard) saveTopic(w http.ResponseWriter, r *http.Request, s *session) error {
	name, desc := strings.TrimSpace(r.PostForm.Get("name")), strings.TrimSpace(r.PostForm.Get("description"))
	t, err := x.d.Topics.Update(r.Context(), s.key.WorkspaceID, r.PathValue("id"), topics.Patch{Name: &name, Description: &desc,
		DefaultOptIn: checked(r, "default_opt_in"), Required: checked(r, "required")})
	if err != nil {
		return err
	}
	return redirect(w, r, "/topics/"+url.PathEscape(t.ID)+"?ok=topic-saved")
}

func (x *Dashboard) confirmArchiveTopic(w http.ResponseWriter, r *http.Request, s *session) error {
	t, err := x.d.Topics.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Archive the topic " + t.Name + "?",
		Text:   "Broadcasts can no longer name it and the preference page no longer offers it; the contacts' choices are kept, and it can be restored.",
		Action: "/topics/" + t.ID + "/archive", Button: "Archive topic", Back: "/topics/" + t.ID})
	return nil
}

func (x *Dashboard) archiveTopic(w http.ResponseWriter, r *http.Request, s *session) error {
	if _, err := x.d.Topics.Archive(r.Context(), s.key.WorkspaceID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/topics?ok=topic-archived")
}

// restoreTopic is PATCH {archived: false}.
func (x *Dashboard) restoreTopic(w http.ResponseWriter, r *http.Request, s *session) error {
	no := false
	t, err := x.d.Topics.Update(r.Context(), s.key.WorkspaceID, r.PathValue("id"), topics.Patch{Archived: &no})
	if err != nil {
		return err
	}
	return redirect(w, r, "/topics/"+url.PathEscape(t.ID)+"?ok=topic-saved")
}
