package dashboard

import (
	"net/http"
	"strings"

	"mailroom/internal/apierr"
)

// Mailboxes: the list (a bound key sees its own), a form to add one, and
// delete; as GET, POST and DELETE /v1/mailboxes.

func (x *Dashboard) mailboxes(w http.ResponseWriter, r *http.Request, s *session) error {
	ms, err := x.d.Inbound.Mailboxes(r.Context(), s.key.WorkspaceID, s.key.MailboxID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "mailboxes", ms)
	return nil
}

// createMailbox takes a local part (on the workspace's subdomain) or a
// full address at a receiving domain; a bound key makes none, as on /v1.
func (x *Dashboard) createMailbox(w http.ResponseWriter, r *http.Request, s *session) error {
	if s.key.MailboxID != "" {
		return apierr.Forbidden("insufficient_scope", "A key bound to a mailbox cannot create mailboxes.").
			WithNext("Use a key that is not bound to a mailbox.")
	}
	address := strings.TrimSpace(r.PostForm.Get("address"))
	if address == "" {
		return apierr.InvalidRequest("Give the mailbox's address, or the part before the @ for one on the workspace subdomain.")
	}
	if _, err := x.d.Inbound.CreateMailbox(r.Context(), s.key.WorkspaceID, address, strings.TrimSpace(r.PostForm.Get("name"))); err != nil {
		return err
	}
	return redirect(w, r, "/mailboxes?ok=mailbox")
}

func (x *Dashboard) confirmDeleteMailbox(w http.ResponseWriter, r *http.Request, s *session) error {
	m, err := x.d.Inbound.Mailbox(r.Context(), s.key.WorkspaceID, s.key.MailboxID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Delete the mailbox " + m.Address + "?",
		Text:   "Mail to the address is refused from now on, and its threads and messages go with it. This cannot be undone.",
		Action: "/mailboxes/" + m.ID + "/delete", Button: "Delete mailbox", Back: "/mailboxes"})
	return nil
}

func (x *Dashboard) deleteMailbox(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.d.Inbound.DeleteMailbox(r.Context(), s.key.WorkspaceID, s.key.MailboxID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/mailboxes?ok=mailbox-deleted")
}
