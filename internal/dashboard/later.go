package dashboard

import (
	"net/http"

	"mailroom/internal/automations"
	"mailroom/internal/broadcasts"
	"mailroom/internal/contacts"
	"mailroom/internal/inbound"
	"mailroom/internal/templates"
)

// Read-only views of the areas that came later: the inbox, audiences,
// templates, broadcasts and automations. Each calls its area's service as
// the matching GET /v1 route does; changes are made through the API.

// listRows bounds these listings (the newest first).
const listRows = 50

// readerOf is the inbox reader a session is: a key bound to a mailbox
// reads only that mailbox, as on GET /v1/threads.
func readerOf(s *session) inbound.Reader {
	return inbound.Reader{WorkspaceID: s.key.WorkspaceID, BoundTo: s.key.MailboxID}
}

func (x *Dashboard) inbox(w http.ResponseWriter, r *http.Request, s *session) error {
	ts, err := x.d.Inbound.Threads(r.Context(), readerOf(s), nil, listRows)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "inbox", ts)
	return nil
}

type threadView struct {
	Thread   *inbound.Thread
	Messages []*inbound.Message
}

// thread shows a conversation; reading it here does not mark anything
// read (a GET changes nothing).
func (x *Dashboard) thread(w http.ResponseWriter, r *http.Request, s *session) error {
	t, ms, err := x.d.Inbound.Thread(r.Context(), readerOf(s), r.PathValue("thread"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "thread", threadView{Thread: t, Messages: ms})
	return nil
}

// messageBody is a received message's body, in its sandboxed iframe.
func (x *Dashboard) messageBody(w http.ResponseWriter, r *http.Request, s *session) error {
	_, ms, err := x.d.Inbound.Thread(r.Context(), readerOf(s), r.PathValue("thread"))
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.ID == r.PathValue("message") {
			serveBody(w, r, deref(m.HTML), deref(m.Text))
			return nil
		}
	}
	return errNotFound("message")
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (x *Dashboard) audiences(w http.ResponseWriter, r *http.Request, s *session) error {
	as, err := x.d.Contacts.Audiences(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "audiences", as)
	return nil
}

type audienceView struct {
	Audience contacts.Audience
	Members  []contacts.Member
	Counts   contacts.MemberCounts
}

func (x *Dashboard) audience(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := x.d.Contacts.Audience(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	ms, counts, err := x.d.Contacts.Members(r.Context(), s.key.WorkspaceID, a.ID, "", listRows, 0, nil)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "audience", audienceView{Audience: a, Members: ms, Counts: counts})
	return nil
}

func (x *Dashboard) templates(w http.ResponseWriter, r *http.Request, s *session) error {
	ts, err := x.d.Templates.List(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "templates", ts)
	return nil
}

type templateView struct {
	Template templates.Template
	Versions []templates.Version
	Preview  templates.Preview
}

// template shows a template's versions and a preview of the published one
// (else the latest), variables filled with samples.
func (x *Dashboard) template(w http.ResponseWriter, r *http.Request, s *session) error {
	t, vs, err := x.d.Templates.Versions(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	p, err := x.d.Templates.Preview(r.Context(), s.key.WorkspaceID, t.ID, "", nil, "")
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "template", templateView{Template: t, Versions: vs, Preview: p})
	return nil
}

// templatePreview is the preview's HTML, for its sandboxed iframe.
func (x *Dashboard) templatePreview(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := x.d.Templates.Preview(r.Context(), s.key.WorkspaceID, r.PathValue("id"), "", nil, "")
	if err != nil {
		return err
	}
	serveBody(w, r, p.HTML, p.Text)
	return nil
}

func (x *Dashboard) broadcasts(w http.ResponseWriter, r *http.Request, s *session) error {
	bs, err := x.d.Broadcasts.List(r.Context(), s.key.WorkspaceID, listRows, nil)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "broadcasts", bs)
	return nil
}

type broadcastView struct {
	Broadcast broadcasts.Broadcast
	Stats     broadcasts.Stats
}

func (x *Dashboard) broadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	b, err := x.d.Broadcasts.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	st, err := x.d.Broadcasts.Stats(r.Context(), b)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "broadcast", broadcastView{Broadcast: b, Stats: st})
	return nil
}

// broadcastBody is the broadcast's content as written (merge fields not
// filled), for its sandboxed iframe.
func (x *Dashboard) broadcastBody(w http.ResponseWriter, r *http.Request, s *session) error {
	b, err := x.d.Broadcasts.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	serveBody(w, r, b.HTML, b.Text)
	return nil
}

func (x *Dashboard) automations(w http.ResponseWriter, r *http.Request, s *session) error {
	as, err := x.d.Automations.List(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "automations", as)
	return nil
}

type automationView struct {
	Automation automations.Automation
	Runs       []automations.Run
}

func (x *Dashboard) automation(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := x.d.Automations.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	runs, err := x.d.Automations.Runs(r.Context(), s.key.WorkspaceID, a.ID, "", listRows)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "automation", automationView{Automation: a, Runs: runs})
	return nil
}
