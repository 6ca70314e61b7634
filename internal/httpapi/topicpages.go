package httpapi

import (
	"context"
	"html/template"
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/topics"
)

// The hosted topic pages: server-rendered HTML with inline styles only (no
// script, font, image or stylesheet from anywhere), plain forms that work
// without JavaScript, laid out for a phone first. A GET never changes
// anything (mail scanners follow links); the forms POST.

var topicPageTemplate = template.Must(template.New("topics").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:1rem;background:#f6f6f4;color:#1d1d1b;line-height:1.45}
main{max-width:34rem;margin:0 auto;background:#fff;border:1px solid #ddd;border-radius:.5rem;padding:1.25rem}
h1{font-size:1.4rem;margin:0 0 .75rem}
.note{background:#eef6ee;border:1px solid #b9dbb9;border-radius:.4rem;padding:.6rem .8rem}
.topic{display:flex;gap:.75rem;align-items:flex-start;padding:.75rem 0;border-top:1px solid #eee}
.topic input{width:1.4rem;height:1.4rem;margin:.15rem 0 0;flex:none}
.topic small{display:block;color:#555}
button{display:block;width:100%;font-size:1rem;padding:.8rem;margin:.75rem 0 0;border-radius:.4rem;border:1px solid #1d1d1b;background:#1d1d1b;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1d1d1b}
a{color:#1d4ed8}
</style></head>
<body><main>
<h1>{{.Title}}</h1>
{{if .Note}}<p class="note" role="status">{{.Note}}</p>{{end}}
{{if .From}}<p>{{.From}}</p>{{end}}
{{if .Text}}<p>{{.Text}}</p>{{end}}
{{if .Prefs}}<form method="post">
<input type="hidden" name="action" value="save">
{{range .Prefs}}<label class="topic"><input type="checkbox" name="topic" value="{{.Topic.Key}}"{{if .Subscribed}} checked{{end}}{{if .Topic.Required}} disabled{{end}}>
<input type="hidden" name="shown" value="{{.Topic.Key}}">
<span><strong>{{.Topic.Name}}</strong>{{if .Topic.Required}} (always sent){{end}}{{if .Topic.Description}}<small>{{.Topic.Description}}</small>{{end}}</span></label>
{{end}}<button type="submit">Save preferences</button>
</form>
<form method="post"><input type="hidden" name="action" value="unsubscribe_all">
<button type="submit" class="secondary">Unsubscribe from all</button></form>
{{end}}
{{if .OneClick}}<form method="post" data-scope="link"><input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">{{.OneClick}}</button></form>{{end}}
{{if .Everything}}<form method="post" data-scope="everything"><input type="hidden" name="action" value="everything">
<button type="submit" class="secondary">{{.Everything}}</button></form>{{end}}
{{if .Manage}}<p><a href="{{.Manage}}">Manage all email preferences</a></p>{{end}}
</main></body></html>
`))

type topicView struct {
	Title, Text, Note string
	Sender            string // whom the reader is leaving: the workspace's name
	From              string // the sentence that names the sender
	Prefs             []topics.Preference
	OneClick          string // label of the button that does what the link says ("" for none)
	Everything        string // label of "everything from this sender" ("" for none)
	Manage            string // link to the preference page
}

// senderName is whom a hosted page names as the sender: the workspace's
// name (there is no display name apart from it).
func (h *handler) senderName(ctx context.Context, workspaceID string) string {
	if w, err := h.d.Workspaces.Workspace(ctx, workspaceID); err == nil && strings.TrimSpace(w.Name) != "" {
		return w.Name
	}
	return "this sender"
}

func renderTopicPage(w http.ResponseWriter, status int, v topicView) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = topicPageTemplate.Execute(w, v)
}

// topicPageError shows a tampered, foreign or expired link as a clear page
// (400) and anything else as a 500 page, logged.
func (h *handler) topicPageError(w http.ResponseWriter, err error) {
	if e, ok := apierr.As(err); ok && e.Status < 500 {
		renderTopicPage(w, http.StatusBadRequest, topicView{Title: "Link not valid",
			Text: "This link is not valid or has expired, so nothing was changed. Use the link in a more recent email from the sender."})
		return
	}
	h.log.Error("topic page", "error", err)
	renderTopicPage(w, http.StatusInternalServerError, topicView{Title: "Something went wrong", Text: "Nothing was changed. Please try again later."})
}

// readForm parses a page's small form body (at most 64 KB).
func readForm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	_ = r.ParseForm() // a body that does not parse is an empty form
}

func (h *handler) showPreferences(w http.ResponseWriter, r *http.Request, p topics.Page, note string) {
	sender := h.senderName(r.Context(), p.WorkspaceID)
	v := topicView{Title: "Email preferences", Note: note, Prefs: p.Preferences, Sender: sender,
		From: "You are choosing which mail you receive from " + sender + ".",
		Text: "Choose what " + p.Email + " receives."}
	if len(p.Preferences) == 0 {
		v.Text = "There is nothing to choose for " + p.Email + " at the moment."
	}
	renderTopicPage(w, http.StatusOK, v)
}

func (h *handler) preferencePage(w http.ResponseWriter, r *http.Request) {
	p, err := h.d.Services.Topics.OpenPreferencePage(r.Context(), r.PathValue("token"))
	if err != nil {
		h.topicPageError(w, err)
		return
	}
	h.showPreferences(w, r, p, "")
}

func (h *handler) preferenceSubmit(w http.ResponseWriter, r *http.Request) {
	readForm(w, r)
	token := r.PathValue("token")
	var p topics.Page
	var err error
	note := "Your preferences are saved."
	if r.PostForm.Get("action") == "unsubscribe_all" {
		p, err = h.d.Services.Topics.UnsubscribeAllPage(r.Context(), token)
		note = "You are unsubscribed from all of these emails."
	} else {
		p, err = h.d.Services.Topics.SavePreferencePage(r.Context(), token, r.PostForm["shown"], r.PostForm["topic"])
	}
	if err != nil {
		h.topicPageError(w, err)
		return
	}
	h.showPreferences(w, r, p, note)
}

// unsubscribeView is the page of a one-click link: a topic's link offers
// "only this topic" (the one-click form, as a mailbox provider posts it)
// and "everything from this sender"; a link without a topic offers the one.
func (h *handler) unsubscribeView(r *http.Request, p topics.Page) topicView {
	sender := h.senderName(r.Context(), p.WorkspaceID)
	v := topicView{Title: "Unsubscribe", Sender: sender, From: "You are unsubscribing from mail sent by " + sender + ".",
		Text:     "Stop sending all email from " + sender + " to " + p.Email + "?",
		OneClick: "Unsubscribe from everything from " + sender,
		Manage:   h.d.Services.Topics.PreferenceURL(p.WorkspaceID, p.Email, h.d.Clock.Now().Add(topics.LinkTTL))}
	if p.Topic != nil {
		v.Text = "Stop sending " + p.Topic.Name + " to " + p.Email + ", or everything from " + sender + "?"
		v.OneClick, v.Everything = "Only "+p.Topic.Name, "Everything from "+sender
	}
	return v
}

func (h *handler) unsubscribePage(w http.ResponseWriter, r *http.Request) {
	p, err := h.d.Services.Topics.OpenUnsubscribePage(r.Context(), r.PathValue("token"))
	if err != nil {
		h.topicPageError(w, err)
		return
	}
	renderTopicPage(w, http.StatusOK, h.unsubscribeView(r, p))
}

// unsubscribeOneClick is RFC 8058's POST (body List-Unsubscribe=One-Click,
// sent by the mailbox provider) and the page's buttons: it unsubscribes
// from what the link names (its topic, or everything), or from everything
// for the page's action=everything, and answers 200, with no cookie and no
// further step.
func (h *handler) unsubscribeOneClick(w http.ResponseWriter, r *http.Request) {
	readForm(w, r)
	everything := r.PostForm.Get("action") == "everything"
	var p topics.Page
	var err error
	if everything {
		p, err = h.d.Services.Topics.UnsubscribeEverything(r.Context(), r.PathValue("token"))
	} else {
		p, err = h.d.Services.Topics.OneClick(r.Context(), r.PathValue("token"), topics.SourceOneClick)
	}
	if err != nil {
		h.topicPageError(w, err)
		return
	}
	v := h.unsubscribeView(r, p)
	v.Title, v.OneClick, v.Text = "Unsubscribed", "", ""
	v.Note = "You will no longer receive any email from " + v.Sender + " at " + p.Email + "."
	if p.Topic != nil && !everything {
		// The reader may still leave everything from the sender.
		v.Note = "You will no longer receive " + p.Topic.Name + " from " + v.Sender + " at " + p.Email + "."
	} else {
		v.Everything = ""
	}
	renderTopicPage(w, http.StatusOK, v)
}
