package httpapi

import (
	"html/template"
	"net/http"
	"strconv"
	"time"

	"mailroom/internal/apierr"
)

type confirmationJSON struct {
	ConfirmURL   string `json:"confirm_url"`
	Email        string `json:"email"`
	EmailID      string `json:"email_id"`
	MembershipID string `json:"membership_id"`
	Sends        int    `json:"sends"`
	Sent         bool   `json:"sent"`
	Status       string `json:"status"`
}

func (h *handler) sendConfirmation(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Services.Contacts.SendConfirmation(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), r.PathValue("member"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, confirmationJSON{MembershipID: c.MembershipID, Email: c.Email, EmailID: c.EmailID,
		Sent: true, Sends: c.Sends, Status: c.Status, ConfirmURL: c.ConfirmURL})
	return nil
}

var confirmTemplate = template.Must(template.New("confirm").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="robots" content="noindex"><title>{{.Title}}</title></head>
<body style="font-family:sans-serif;max-width:32em;margin:3em auto">
<h1>{{.Title}}</h1><p>{{.Text}}</p>
{{if .Form}}<form method="post"><button type="submit">Confirm my subscription</button></form>{{end}}
</body></html>
`))

type confirmView struct {
	Title, Text string
	Form        bool
}

func renderPage(w http.ResponseWriter, status int, v confirmView) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = confirmTemplate.Execute(w, v)
}

func (h *handler) badLinkPage(w http.ResponseWriter, err error) {
	if _, ok := apierr.As(err); ok {
		renderPage(w, http.StatusBadRequest, confirmView{Title: "Link not valid",
			Text: "This confirmation link is not valid or has expired. Ask the sender for a new confirmation email."})
		return
	}
	h.log.Error("confirmation page", "error", err)
	renderPage(w, http.StatusInternalServerError, confirmView{Title: "Something went wrong", Text: "Please try again later."})
}

// pageLimit holds a hosted page to the anonymous per-IP budget
// (MAILROOM_RATE_LIMIT_ANONYMOUS a minute), in a bucket of its own so that a
// browser's pages and an API client's anonymous calls do not share it:
// the links' tokens cannot be guessed, but each try costs an HMAC and a
// read, and a page must not be a free oracle. Over the budget it answers
// 429 on a page with Retry-After; an outage of the limiter's store lets
// the request through, as on /v1.
func (h *handler) pageLimit(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res, err := h.d.Limiter.Allow(r.Context(), "page:ip:"+clientIP(r), h.d.AnonymousLimit)
		if err != nil {
			h.log.Warn("rate limiter unavailable", "err", err)
			next(w, r)
			return
		}
		if !res.Allowed {
			wait := res.RetryAfter(h.d.Clock.Now())
			w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
			renderPage(w, http.StatusTooManyRequests, confirmView{Title: "Too many requests",
				Text: "Too many requests came from your address. Wait a minute, then open the link again."})
			return
		}
		next(w, r)
	}
}

func (h *handler) confirmPage(w http.ResponseWriter, r *http.Request) {
	email, audience, err := h.d.Services.Contacts.CheckConfirmLink(r.Context(), r.PathValue("token"))
	if err != nil {
		h.badLinkPage(w, err)
		return
	}
	renderPage(w, http.StatusOK, confirmView{Title: "Confirm your subscription",
		Text: "Confirm that " + email + " wants to receive " + audience + ".", Form: true})
}

func (h *handler) confirmSubmit(w http.ResponseWriter, r *http.Request) {
	status, audience, err := h.d.Services.Contacts.Confirm(r.Context(), r.PathValue("token"))
	if err != nil {
		h.badLinkPage(w, err)
		return
	}
	text := "You are subscribed to " + audience + ". Thank you."
	if status != "subscribed" {
		text = "Nothing changed: this subscription to " + audience + " is " + status + "."
	}
	renderPage(w, http.StatusOK, confirmView{Title: "Subscription confirmed", Text: text})
}
