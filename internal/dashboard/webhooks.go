package dashboard

import (
	"net/http"
	"slices"
	"strings"

	"mailroom/internal/events"

	"mailroom/internal/apierr"
	"mailroom/internal/webhooks"
)

type webhooksView struct {
	Endpoints []*webhooks.Endpoint
	Events    []eventChoice // the events an endpoint may subscribe to
}

// eventChoice is one checkbox of the form; the defaults come ticked.
type eventChoice struct {
	Name    string
	Checked bool
}

func (x *Dashboard) webhooks(w http.ResponseWriter, r *http.Request, s *session) error {
	list, err := x.d.Webhooks.List(r.Context(), s.key.WorkspaceID, s.key.MailboxID)
	if err != nil {
		return err
	}
	v := webhooksView{Endpoints: list}
	for _, e := range webhooks.Events() {
		v.Events = append(v.Events, eventChoice{Name: e, Checked: slices.Contains(webhooks.DefaultEvents(), e)})
	}
	x.render(w, r, s, http.StatusOK, "webhooks", v)
	return nil
}

// addWebhook registers an endpoint; a key bound to a mailbox registers one
// scoped to that mailbox, as POST /v1/webhooks with its mailbox_id would.
func (x *Dashboard) addWebhook(w http.ResponseWriter, r *http.Request, s *session) error {
	p := webhooks.CreateParams{URL: strings.TrimSpace(r.PostForm.Get("url")), Events: r.PostForm["event"], MailboxID: s.key.MailboxID}
	e, err := x.d.Webhooks.Create(r.Context(), s.key.WorkspaceID, p)
	if err != nil {
		return err
	}
	// The signing secret is shown on this answer only, as the API's create.
	return x.renderWebhook(w, r, s, http.StatusCreated, e, webhookView{Secret: e.Secret, Created: true})
}

// rotateWebhook makes a new signing secret (the previous one keeps
// verifying for the rotation's grace window) and shows it once.
func (x *Dashboard) rotateWebhook(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := x.d.Webhooks.Update(r.Context(), s.key.WorkspaceID, s.key.MailboxID, r.PathValue("id"), webhooks.UpdateParams{RotateSecret: true})
	if err != nil {
		return err
	}
	return x.renderWebhook(w, r, s, http.StatusOK, e, webhookView{Secret: e.Secret})
}

// deliveryRows is how many of an endpoint's newest deliveries its page shows.
const deliveryRows = 50

type webhookView struct {
	Endpoint   *webhooks.Endpoint
	Deliveries []webhooks.Delivery
	Result     *webhooks.ManualResult // the test or replay just made
	Action     string                 // "test" or "replay"
	Secret     string                 // a signing secret just made: shown on this page only
	Created    bool                   // the endpoint was just created
	Event      string                 // the deliveries' filter
	Events     []string               // its choices
	Next       string                 // the older deliveries' query string
	EmailOf    map[string]string      // a delivery's event → the email it is about
}

func (x *Dashboard) showWebhook(w http.ResponseWriter, r *http.Request, s *session, id string, res *webhooks.ManualResult, action string) error {
	e, err := x.d.Webhooks.Get(r.Context(), s.key.WorkspaceID, s.key.MailboxID, id)
	if err != nil {
		return err
	}
	return x.renderWebhook(w, r, s, http.StatusOK, e, webhookView{Result: res, Action: action})
}

// renderWebhook shows endpoint e with its newest deliveries and v's extras.
func (x *Dashboard) renderWebhook(w http.ResponseWriter, r *http.Request, s *session, status int, e *webhooks.Endpoint, v webhookView) error {
	q := webhooks.DeliveryQuery{WebhookID: e.ID, BoundTo: s.key.MailboxID, Limit: deliveryRows + 1}
	if r.Method == http.MethodGet {
		v.Event = r.URL.Query().Get("event")
		if v.Event != "" && !slices.Contains(webhooks.Events(), v.Event) {
			return apierr.InvalidRequest("Unknown event %q.", v.Event)
		}
		if a := r.URL.Query().Get("after"); a != "" {
			ms, id, err := parseCursor(a)
			if err != nil {
				return err
			}
			q.AfterAt, q.AfterID = ms, id
		}
	}
	q.Event = v.Event
	ds, err := x.d.Webhooks.ListDeliveries(r.Context(), s.key.WorkspaceID, q)
	if err != nil {
		return err
	}
	if len(ds) > deliveryRows {
		ds = ds[:deliveryRows]
		last := ds[len(ds)-1]
		v.Next = urlValues{"event": v.Event, "after": cursor(last.CreatedAt.UnixMilli(), last.ID)}.encode()
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.EventID
	}
	if v.EmailOf, err = events.EmailsOf(r.Context(), x.d.DB, s.key.WorkspaceID, ids); err != nil {
		return err
	}
	v.Endpoint, v.Deliveries, v.Events = e, ds, webhooks.Events()
	x.render(w, r, s, status, "webhook", v)
	return nil
}

func (x *Dashboard) webhook(w http.ResponseWriter, r *http.Request, s *session) error {
	return x.showWebhook(w, r, s, r.PathValue("id"), nil, "")
}

// testWebhook sends a test event now and shows the endpoint's answer.
func (x *Dashboard) testWebhook(w http.ResponseWriter, r *http.Request, s *session) error {
	res, err := x.d.Webhooks.SendTest(r.Context(), s.key.WorkspaceID, s.key.MailboxID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return x.showWebhook(w, r, s, r.PathValue("id"), res, "test")
}

// replayDelivery sends one delivery's event again now and shows the answer.
func (x *Dashboard) replayDelivery(w http.ResponseWriter, r *http.Request, s *session) error {
	res, err := x.d.Webhooks.Replay(r.Context(), s.key.WorkspaceID, s.key.MailboxID, r.PathValue("delivery"))
	if err != nil {
		return err
	}
	return x.showWebhook(w, r, s, r.PathValue("id"), res, "replay")
}

// confirmView is a destructive action's confirmation page: nothing changes
// until its one button is pressed (a GET only shows).
type confirmView struct {
	Title, Text, Action, Button, Back string
}

// confirmDeleteWebhook asks before deleting an endpoint.
func (x *Dashboard) confirmDeleteWebhook(w http.ResponseWriter, r *http.Request, s *session) error {
	e, err := x.d.Webhooks.Get(r.Context(), s.key.WorkspaceID, s.key.MailboxID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Delete the endpoint " + e.URL + "?",
		Text:   "It stops receiving events at once, and its delivery log goes with it. This cannot be undone.",
		Action: "/webhooks/" + e.ID + "/delete", Button: "Delete endpoint", Back: "/webhooks/" + e.ID})
	return nil
}

// deleteWebhook deletes an endpoint, as DELETE /v1/webhooks/{id} does.
func (x *Dashboard) deleteWebhook(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.d.Webhooks.Delete(r.Context(), s.key.WorkspaceID, s.key.MailboxID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/webhooks?ok=webhook-deleted")
}

// setWebhookActive disables or enables an endpoint, as PATCH {active} does.
func (x *Dashboard) setWebhookActive(w http.ResponseWriter, r *http.Request, s *session) error {
	active := r.PostForm.Get("active") == "true"
	e, err := x.d.Webhooks.Update(r.Context(), s.key.WorkspaceID, s.key.MailboxID, r.PathValue("id"), webhooks.UpdateParams{Active: &active})
	if err != nil {
		return err
	}
	return x.renderWebhook(w, r, s, http.StatusOK, e, webhookView{})
}
