package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"

	"mailroom/internal/workspaces"
)

//go:embed templates/*.html assets/*
var files embed.FS

// pageCSP is every page's policy: nothing but this origin's own stylesheet,
// script, images and frames (the message iframe); no inline script or
// style; no framing of the dashboard itself.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; " +
	"form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"

// bodyCSP is the policy of a message's own document, shown in a sandboxed
// iframe: no script, no remote fetch (images from the sender would tell
// them it was read), its inline styles only, and a sandbox even when opened
// on its own.
const bodyCSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"

// pages holds one template set per page (layout plus the page's content).
type pages map[string]*template.Template

var funcs = template.FuncMap{
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") + " UTC" },
	"whenp": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04") + " UTC"
	},
	"pct": percent,
	// query marks a query string built by url.Values.Encode as one, so
	// html/template keeps its = and & (it would escape a plain string).
	"query": func(q string) template.URL { return template.URL(q) },
	"bytes": func(n int) string {
		switch {
		case n >= 1<<20:
			return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
		case n >= 1<<10:
			return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KB"
		}
		return strconv.Itoa(n) + " bytes"
	},
	"path": url.PathEscape, // one path segment from text (a filename may hold ? or #)
	"join": strings.Join,
	"deref": func(p *int) string {
		if p == nil {
			return "—"
		}
		return strconv.Itoa(*p)
	},
	"deref0": func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	},
}

// percent shows a rate (0..1) as a percentage, "—" when there is none.
func percent(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v*100, 'f', 2, 64) + "%"
}

func parsePages() pages {
	// The layout and the partials (templates/_*.html) every page may use.
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/_*.html"))
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		panic(err)
	}
	p := pages{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		p[base] = template.Must(template.Must(layout.Clone()).ParseFS(files, n))
	}
	return p
}

// view is what the layout reads; Data is the page's own.
type view struct {
	Title     string
	Nav       string // the section to highlight
	CSRF      string // the session's form token ("" when signed out)
	Workspace string
	KeyName   string
	Bound     bool // the key is bound to a mailbox: the workspace-wide sections are hidden
	Captures  bool // outbound mail is captured (mailroom dev): the Captured section shows
	Flash     string
	Refresh   int // seconds; a page whose state moves reloads itself (no script needed)
	Data      any
}

// refresher is a page's data that asks to be reloaded while it changes.
type refresher interface{ Refresh() int }

// setPageHeaders are every dashboard answer's headers.
func setPageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

// render writes page name with data and status.
func (x *Dashboard) render(w http.ResponseWriter, r *http.Request, s *session, status int, name string, data any) {
	v := view{Title: titles[name], Nav: name, Flash: flashes[r.URL.Query().Get("ok")], Data: data, Captures: x.d.Capture != nil}
	if rf, ok := data.(refresher); ok {
		v.Refresh = rf.Refresh()
	}
	if s != nil {
		v.CSRF, v.Workspace, v.KeyName, v.Bound = s.row.csrf, s.key.WorkspaceID, s.key.Name, s.key.MailboxID != ""
	}
	var buf bytes.Buffer
	if err := x.pages[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		x.log.Error("dashboard: rendering", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// titles are the pages' titles.
var titles = map[string]string{
	"signin": "Sign in", "overview": "Overview", "emails": "Emails", "email": "Email",
	"domains": "Domains", "domain": "Domain", "webhooks": "Webhooks", "webhook": "Webhook",
	"apikeys": "API keys", "keycreated": "API key created", "suppressions": "Suppressions", "error": "Error",
	"inbox": "Inbox", "thread": "Conversation", "audiences": "Audiences", "audience": "Audience", "templates": "Templates",
	"template": "Template", "broadcasts": "Broadcasts", "broadcast": "Broadcast", "compose": "New broadcast", "import": "Import", "mapping": "Import columns", "automations": "Automations", "automation": "Automation",
	"logs": "Logs", "log": "Request", "confirm": "Confirm", "topics": "Topics", "topic": "Topic", "segments": "Segments", "contacts": "Contacts", "contact": "Contact", "mailboxes": "Mailboxes", "captured": "Captured mail", "capturedmessage": "Captured message",
}

// flashes are the notes a redirect after a change asks for (?ok=...): a
// fixed list, so a link cannot put words on the page.
var flashes = map[string]string{
	"revoked":            "The API key is revoked.",
	"webhook-deleted":    "The webhook endpoint is deleted.",
	"domain-deleted":     "The domain is removed.",
	"template-deleted":   "The template is deleted.",
	"audience-deleted":   "The audience is deleted.",
	"automation-deleted": "The automation is deleted.",
	"suppressed":         "The address is suppressed.",
	"removed":            "The suppression is removed.",
	"domain":             "The domain is added. Publish its records, then verify.",
	"saved":              "The automation is saved as a new version.",
	"replied":            "Your reply is sent.",
	"template":           "The template is saved.",
	"draft":              "The draft is saved.",
	"audience":           "The audience is created.",
	"draft-saved":        "The draft is saved.",
	"sending":            "The broadcast is going out.",
	"scheduled":          "The broadcast is scheduled.",
	"cancelled":          "The broadcast is cancelled.",
	"published":          "The template is saved and published: sends use it now.",
	"topic":              "The topic is created.",
	"topic-saved":        "The topic is saved.",
	"topic-archived":     "The topic is archived.",
	"segment":            "The segment is created.",
	"segment-deleted":    "The segment is deleted.",
	"mailbox":            "The mailbox is created.",
	"mailbox-deleted":    "The mailbox is deleted.",
	"member-added":       "The address is added to the audience.",
	"member-held":        "The address is added, but not subscribed: it was suppressed or had unsubscribed.",
	"member-removed":     "The member is removed.",
	"duplicated":         "This draft is a copy: check it, then send.",
}

// pageFunc is a page handler with its session; it returns an error that
// fail turns into a page.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *session) error

// page wraps a handler: the session (or a redirect to sign-in), the scope
// the page needs, the CSRF check of a POST.
func (x *Dashboard) page(g workspaces.Grant, fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := x.current(r)
		if err != nil {
			x.fail(w, r, nil, err)
			return
		}
		if s == nil {
			if c, _ := r.Cookie(sessionCookie); c != nil {
				x.clearCookie(w, sessionCookie)
			}
			if r.Method != http.MethodGet {
				x.fail(w, r, nil, errNoSession)
				return
			}
			http.Redirect(w, r, "/sign-in", http.StatusSeeOther)
			return
		}
		if scope, bound := s.key.Denied(g); scope != "" {
			x.fail(w, r, s, errScope(scope))
			return
		} else if bound {
			x.fail(w, r, s, errBound(s.key.MailboxID))
			return
		}
		if r.Method == http.MethodPost {
			if err := checkForm(w, r, s.row.csrf); err != nil {
				x.fail(w, r, s, err)
				return
			}
		}
		if err := fn(w, r, s); err != nil {
			x.fail(w, r, s, err)
		}
	})
}

type errorView struct {
	Status  int
	Message string
	Next    string
}

// fail shows err as a page: the service's message for what the person can
// fix, a plain 500 (logged) for anything else.
func (x *Dashboard) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	v := errorView{Status: http.StatusInternalServerError, Message: "Something went wrong. Nothing was changed; try again later."}
	if err == errNoSession {
		v = errorView{Status: http.StatusUnauthorized, Message: "You are signed out. Sign in again, then retry."}
	} else if e, ok := apierr.As(err); ok && e.Status < 500 {
		v = errorView{Status: e.Status, Message: e.Message, Next: e.Next}
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
	} else {
		x.log.Error("dashboard", "path", r.URL.Path, "err", err)
	}
	x.render(w, r, s, v.Status, "error", v)
}

func (x *Dashboard) notFound(w http.ResponseWriter, r *http.Request) {
	x.fail(w, r, nil, apierr.NotFound("page"))
}

// asset serves the stylesheet and the script, cached for a day.
func (x *Dashboard) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := files.ReadFile("assets/" + name)
	if err != nil || strings.Contains(name, "/") {
		x.notFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", fmt.Sprint(len(b)))
	_, _ = w.Write(b)
}

// redirect answers a change with 303 to target (Post/Redirect/Get).
func redirect(w http.ResponseWriter, r *http.Request, target string) error {
	http.Redirect(w, r, target, http.StatusSeeOther)
	return nil
}

// urlValues is a query string's parameters; empty ones are left out.
type urlValues map[string]string

func (v urlValues) encode() string {
	q := url.Values{}
	for k, s := range v {
		if s != "" {
			q.Set(k, s)
		}
	}
	return q.Encode()
}

func errNotFound(what string) error { return apierr.NotFound(what) }
