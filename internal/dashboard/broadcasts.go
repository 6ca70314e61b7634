package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/broadcasts"
	"mailroom/internal/contacts"
	"mailroom/internal/segments"
	"mailroom/internal/templates"
	"mailroom/internal/topics"
)

// Broadcasts: the list; compose a draft and edit it (POST and PATCH
// /v1/broadcasts), its problems in words, a preview for one member, a test
// send, send now or schedule, cancel, and the recipients with their
// statuses. Each calls the service the matching /v1 route calls.

func (x *Dashboard) broadcasts(w http.ResponseWriter, r *http.Request, s *session) error {
	bs, err := x.d.Broadcasts.List(r.Context(), s.key.WorkspaceID, listRows, nil)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "broadcasts", bs)
	return nil
}

// broadcastForm is the compose form's fields, as stored or as submitted.
type broadcastForm struct {
	Name, From, ReplyTo, Subject, HTML, Text string
	AudienceID, SegmentID, TopicID           string
	TemplateID                               string
	TrackOpens, TrackClicks                  bool
}

// choices are what the form's lists offer.
type choices struct {
	Audiences []contacts.Audience
	Segments  []segments.Segment
	Topics    []topics.Topic
	Templates []templates.Template // the sendable ones
}

func (x *Dashboard) choices(r *http.Request, s *session) (choices, error) {
	var c choices
	var err error
	ctx, wsID := r.Context(), s.key.WorkspaceID
	if c.Audiences, err = x.d.Contacts.Audiences(ctx, wsID); err != nil {
		return c, err
	}
	if c.Segments, err = x.d.Segments.List(ctx, wsID, ""); err != nil {
		return c, err
	}
	if c.Topics, err = x.d.Topics.List(ctx, wsID, false); err != nil {
		return c, err
	}
	ts, err := x.d.Templates.List(ctx, wsID)
	for _, t := range ts {
		if t.Sendable() {
			c.Templates = append(c.Templates, t)
		}
	}
	return c, err
}

func broadcastFormOf(r *http.Request) broadcastForm {
	f := r.PostForm
	return broadcastForm{Name: f.Get("name"), From: f.Get("from"), ReplyTo: f.Get("reply_to"), Subject: f.Get("subject"),
		HTML: f.Get("html"), Text: f.Get("text"), AudienceID: f.Get("audience_id"), SegmentID: f.Get("segment_id"),
		TopicID: f.Get("topic_id"), TemplateID: f.Get("template_id"), TrackOpens: f.Get("track_opens") == "on", TrackClicks: f.Get("track_clicks") == "on"}
}

func formOfBroadcast(b broadcasts.Broadcast) broadcastForm {
	return broadcastForm{Name: b.Name, From: b.From, ReplyTo: b.ReplyTo, Subject: b.Subject, HTML: b.HTML, Text: b.Text,
		AudienceID: b.AudienceID, SegmentID: b.SegmentID, TopicID: b.TopicID, TemplateID: b.TemplateID, TrackOpens: b.TrackOpens, TrackClicks: b.TrackClicks}
}

// input is the form as the service's input: every field set, so an edit
// can also clear one (as a PATCH with "" does).
func (f broadcastForm) input() broadcasts.Input {
	return broadcasts.Input{Name: &f.Name, From: &f.From, ReplyTo: &f.ReplyTo, Subject: &f.Subject, HTML: &f.HTML, Text: &f.Text,
		AudienceID: &f.AudienceID, SegmentID: &f.SegmentID, TopicID: &f.TopicID, TemplateID: &f.TemplateID,
		TrackOpens: &f.TrackOpens, TrackClicks: &f.TrackClicks}
}

type composeView struct {
	Form    broadcastForm
	Choices choices
	Error   string
}

func (x *Dashboard) newBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	return x.showCompose(w, r, s, http.StatusOK, composeView{})
}

func (x *Dashboard) showCompose(w http.ResponseWriter, r *http.Request, s *session, status int, v composeView) error {
	c, err := x.choices(r, s)
	if err != nil {
		return err
	}
	v.Choices = c
	x.render(w, r, s, status, "compose", v)
	return nil
}

// createBroadcast stores the draft (POST /v1/broadcasts); what still stops
// a send is listed on the draft's page.
func (x *Dashboard) createBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	f := broadcastFormOf(r)
	b, _, err := x.d.Broadcasts.Create(r.Context(), s.key.WorkspaceID, f.input())
	if e, ok := apierr.As(err); ok && e.Status < 500 {
		return x.showCompose(w, r, s, e.Status, composeView{Form: f, Error: e.Message})
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/broadcasts/"+url.PathEscape(b.ID)+"?ok=draft")
}

type broadcastView struct {
	Broadcast  broadcasts.Broadcast
	Stats      broadcasts.Stats
	Problems   []broadcasts.Problem // what stops a draft's send
	Recipients []broadcasts.Recipient
	Status     string // the recipients' filter
	Statuses   []string
	Form       broadcastForm // a draft's editor
	Choices    choices
	Error      string // a refused edit, in words
	Tested     *testResult
	Member     string // the preview's member ("" for the first)
	Preview    *broadcasts.Rendered
	PreviewErr string
	Now        string // the schedule field's minimum, UTC
}

// Refresh reloads a page while its broadcast is going out, so the
// recipients' statuses move without script.
func (v broadcastView) Refresh() int {
	if v.Broadcast.Status == broadcasts.StatusSending || (v.Broadcast.Status == broadcasts.StatusSent && v.Stats.Pending+v.Stats.Sent > 0) {
		return 2
	}
	return 0
}

// testResult is a test send's outcome.
type testResult struct {
	Sent    int
	Skipped []string
}

func (x *Dashboard) broadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	return x.showBroadcast(w, r, s, http.StatusOK, broadcastView{})
}

func (x *Dashboard) showBroadcast(w http.ResponseWriter, r *http.Request, s *session, status int, v broadcastView) error {
	ctx, wsID := r.Context(), s.key.WorkspaceID
	b, err := x.d.Broadcasts.Get(ctx, wsID, r.PathValue("id"))
	if err != nil {
		return err
	}
	v.Broadcast, v.Status = b, r.URL.Query().Get("status")
	v.Statuses = []string{broadcasts.RcptPending, broadcasts.RcptSent, broadcasts.RcptDelivered, broadcasts.RcptBounced,
		broadcasts.RcptComplained, broadcasts.RcptFailed, broadcasts.RcptSkipped}
	if v.Recipients, v.Stats, err = x.d.Broadcasts.Recipients(ctx, wsID, b.ID, v.Status, listRows, 0, ""); err != nil {
		return err
	}
	if b.Status == broadcasts.StatusDraft {
		if v.Problems, err = x.d.Broadcasts.Problems(ctx, b); err != nil {
			return err
		}
		if v.Choices, err = x.choices(r, s); err != nil {
			return err
		}
		if v.Error == "" {
			v.Form = formOfBroadcast(b)
		}
		v.Now = x.d.Clock.Now().UTC().Add(time.Minute).Format("2006-01-02T15:04")
	}
	// The preview for one member (or the first), as GET
	// /v1/broadcasts/{id}/preview?email= renders it; not on each reload
	// while the broadcast goes out (it reads the audience's members).
	v.Member = strings.TrimSpace(r.URL.Query().Get("member"))
	if v.Refresh() > 0 && v.Member == "" {
		x.render(w, r, s, status, "broadcast", v)
		return nil
	}
	p, err := x.d.Broadcasts.Preview(ctx, wsID, b.ID, v.Member)
	if e, ok := apierr.As(err); ok && e.Status < 500 {
		v.PreviewErr = e.Message
	} else if err != nil {
		return err
	} else {
		v.Preview = &p
	}
	x.render(w, r, s, status, "broadcast", v)
	return nil
}

// saveBroadcast edits the draft (PATCH /v1/broadcasts/{id}; from cannot
// change); a refused edit comes back with what was typed and why.
func (x *Dashboard) saveBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	f := broadcastFormOf(r)
	in := f.input()
	in.From = nil
	_, _, err := x.d.Broadcasts.Update(r.Context(), s.key.WorkspaceID, r.PathValue("id"), in)
	if e, ok := apierr.As(err); ok && e.Status < 500 {
		return x.showBroadcast(w, r, s, e.Status, broadcastView{Form: f, Error: e.Message})
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/broadcasts/"+url.PathEscape(r.PathValue("id"))+"?ok=draft-saved")
}

// sendBroadcast sends the draft now or books it for scheduled_at, a UTC
// time from the form's datetime field (POST /v1/broadcasts/{id}/send).
func (x *Dashboard) sendBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	var at *time.Time
	ok := "sending"
	if r.PostForm.Get("action") == "schedule" {
		t, err := time.ParseInLocation("2006-01-02T15:04", r.PostForm.Get("scheduled_at"), time.UTC)
		if err != nil {
			return apierr.InvalidRequest("Give the time to send at, in UTC (for example 2026-12-01 09:00).")
		}
		at, ok = &t, "scheduled"
	}
	if _, err := x.d.Broadcasts.Send(r.Context(), s.key.WorkspaceID, r.PathValue("id"), at); err != nil {
		return err
	}
	return redirect(w, r, "/broadcasts/"+url.PathEscape(r.PathValue("id"))+"?ok="+ok)
}

// cancelBroadcast stops a draft, a scheduled or a sending broadcast (POST
// /v1/broadcasts/{id}/cancel).
func (x *Dashboard) cancelBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	if _, err := x.d.Broadcasts.Cancel(r.Context(), s.key.WorkspaceID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/broadcasts/"+url.PathEscape(r.PathValue("id"))+"?ok=cancelled")
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
	return x.showBroadcast(w, r, s, http.StatusOK, broadcastView{Tested: &testResult{Sent: n, Skipped: skipped}})
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

// broadcastPreview is the broadcast rendered for one member (?email=, else
// the first), for its sandboxed iframe.
func (x *Dashboard) broadcastPreview(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := x.d.Broadcasts.Preview(r.Context(), s.key.WorkspaceID, r.PathValue("id"), strings.TrimSpace(r.URL.Query().Get("email")))
	if e, ok := apierr.As(err); ok && e.Status < 500 && e.Status != http.StatusNotFound {
		serveBody(w, r, "", "The preview cannot be shown: "+e.Message)
		return nil
	}
	if err != nil {
		return err
	}
	serveBody(w, r, p.HTML, p.Text)
	return nil
}
