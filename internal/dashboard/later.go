package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"mailroom/internal/apierr"

	"mailroom/internal/automations"
	"mailroom/internal/broadcasts"
	"mailroom/internal/contacts"
	"mailroom/internal/inbound"
	"mailroom/internal/sending"
	"mailroom/internal/templates"
)

// The areas that came later: the inbox (read, reply), audiences, templates,
// broadcasts (views) and automations (view, edit the YAML). Each calls its
// area's service as the matching /v1 route does.

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
	Tested    *testResult // the test send just made
}

// testResult is a test send's outcome.
type testResult struct {
	Sent    int
	Skipped []string
}

func (x *Dashboard) broadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	return x.showBroadcast(w, r, s, nil)
}

// testBroadcast sends the broadcast to a few addresses now, as POST
// /v1/broadcasts/{id}/test does, and shows how many went.
func (x *Dashboard) testBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	var to []string
	for _, a := range strings.Split(r.PostForm.Get("to"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			to = append(to, a)
		}
	}
	n, skipped, err := x.d.Broadcasts.Test(r.Context(), s.key.WorkspaceID, r.PathValue("id"), to)
	if err != nil {
		return err
	}
	return x.showBroadcast(w, r, s, &testResult{Sent: n, Skipped: skipped})
}

func (x *Dashboard) showBroadcast(w http.ResponseWriter, r *http.Request, s *session, tested *testResult) error {
	b, err := x.d.Broadcasts.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	st, err := x.d.Broadcasts.Stats(r.Context(), b)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "broadcast", broadcastView{Broadcast: b, Stats: st, Tested: tested})
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
	// After a refused edit: the YAML as submitted, line by line with the
	// problems at their lines, and every problem.
	Draft    []yamlLine
	Problems []automations.Problem
	Source   string // the textarea's content
}

// yamlLine is one numbered line of a refused definition.
type yamlLine struct {
	N        int
	Text     string
	Problems []string
}

func (x *Dashboard) automation(w http.ResponseWriter, r *http.Request, s *session) error {
	return x.showAutomation(w, r, s, http.StatusOK, automationView{})
}

func (x *Dashboard) showAutomation(w http.ResponseWriter, r *http.Request, s *session, status int, v automationView) error {
	a, err := x.d.Automations.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	runs, err := x.d.Automations.Runs(r.Context(), s.key.WorkspaceID, a.ID, "", listRows)
	if err != nil {
		return err
	}
	v.Automation, v.Runs = a, runs
	if v.Source == "" {
		v.Source = a.YAML
	}
	x.render(w, r, s, status, "automation", v)
	return nil
}

// saveAutomation saves the edited YAML as a new version; a definition the
// service refuses comes back with its problems at their lines.
func (x *Dashboard) saveAutomation(w http.ResponseWriter, r *http.Request, s *session) error {
	src := r.PostForm.Get("yaml")
	_, err := x.d.Automations.Update(r.Context(), s.key.WorkspaceID, r.PathValue("id"), nil, []byte(src))
	if e, ok := apierr.As(err); ok && e.Code == "invalid_automation" {
		problems, _ := e.Extra["problems"].([]automations.Problem)
		v := automationView{Source: src, Problems: problems}
		at := map[int][]string{}
		for _, p := range problems {
			at[p.Line] = append(at[p.Line], p.String())
		}
		for i, line := range strings.Split(src, "\n") {
			v.Draft = append(v.Draft, yamlLine{N: i + 1, Text: line, Problems: at[i+1]})
		}
		return x.showAutomation(w, r, s, http.StatusBadRequest, v)
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/automations/"+url.PathEscape(r.PathValue("id"))+"?ok=saved")
}

// reply answers every participant of a received message from its mailbox
// (POST /v1/messages/{id}/reply-all), then shows the thread.
func (x *Dashboard) reply(w http.ResponseWriter, r *http.Request, s *session) error {
	body := r.PostForm.Get("body")
	if strings.TrimSpace(body) == "" {
		return apierr.InvalidRequest("Write a reply first.")
	}
	if _, err := x.d.Inbound.ReplyAll(r.Context(), readerOf(s), sending.CallerFor(s.key), r.PathValue("message"), body, nil, nil); err != nil {
		return err
	}
	return redirect(w, r, "/inbox/"+url.PathEscape(r.PathValue("thread"))+"?ok=replied")
}
