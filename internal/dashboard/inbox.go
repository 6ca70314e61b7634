package dashboard

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/inbound"
	"mailroom/internal/sending"
)

// The inbox: threads, a message in its sandboxed frame, its attachments, and a
// reply; each as the matching /v1 route does (a GET marks nothing read).

// listRows bounds the later areas' listings (the newest first).
const listRows = 50

// readerOf is the inbox reader a session is: a key bound to a mailbox
// reads only that mailbox, as on GET /v1/threads.
func readerOf(s *session) inbound.Reader {
	return inbound.Reader{WorkspaceID: s.key.WorkspaceID, BoundTo: s.key.MailboxID}
}

type inboxView struct {
	Q       string
	Hits    []inbound.Hit // a search's messages, best first
	Threads []inbound.Thread
	Paged   bool
	Next    string
}

// inbox lists the conversations, newest first with "Older →", or with ?q=
// the messages a full-text search finds (GET /v1/messages/search).
func (x *Dashboard) inbox(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	v := inboxView{Q: strings.TrimSpace(q.Get("q"))}
	if v.Q != "" {
		hits, err := x.d.Inbound.Search(r.Context(), readerOf(s), v.Q, listRows)
		if err != nil {
			return err
		}
		v.Hits = hits
		x.render(w, r, s, http.StatusOK, "inbox", v)
		return nil
	}
	var pos *inbound.Position
	if after := q.Get("after"); after != "" {
		ms, id, err := parseCursor(after)
		if err != nil {
			return err
		}
		pos, v.Paged = &inbound.Position{At: ms, ID: id}, true
	}
	ts, err := x.d.Inbound.Threads(r.Context(), readerOf(s), pos, listRows+1)
	if err != nil {
		return err
	}
	if len(ts) > listRows {
		ts = ts[:listRows]
		last := ts[len(ts)-1]
		v.Next = urlValues{"after": cursor(last.LastMessageAt.UnixMilli(), last.ID)}.encode()
	}
	v.Threads = ts
	x.render(w, r, s, http.StatusOK, "inbox", v)
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

// attachment downloads a received message's attachment, as GET
// /v1/messages/{id}/attachments/{filename} does: its own content type, but
// always as a download (received mail is the sender's to write), and a
// sandbox policy in case a browser shows it anyway.
func (x *Dashboard) attachment(w http.ResponseWriter, r *http.Request, s *session) error {
	name := r.PathValue("filename")
	ct, data, err := x.d.Inbound.Attachment(r.Context(), readerOf(s), r.PathValue("message"), name)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	return nil
}
