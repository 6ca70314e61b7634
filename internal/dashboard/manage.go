package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/automations"
	"mailroom/internal/broadcasts"
	"mailroom/internal/contacts"
	"mailroom/internal/workspaces"
)

// The delete and switch actions of templates, audiences and automations:
// each asks first on a confirmation page (a GET changes nothing) and then
// makes the API's own service call.

func (x *Dashboard) confirmDeleteTemplate(w http.ResponseWriter, r *http.Request, s *session) error {
	t, err := x.d.Templates.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Delete the template " + t.Name + "?",
		Text:   "Its versions go with it; sends that name it are refused from now on. Broadcasts already sent keep what they sent.",
		Action: "/templates/" + t.ID + "/delete", Button: "Delete template", Back: "/templates/" + t.ID})
	return nil
}

func (x *Dashboard) deleteTemplate(w http.ResponseWriter, r *http.Request, s *session) error {
	if _, err := x.d.Templates.Delete(r.Context(), s.key.WorkspaceID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/templates?ok=template-deleted")
}

func (x *Dashboard) confirmDeleteAudience(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := x.d.Contacts.Audience(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Delete the audience " + a.Name + "?",
		Text:   "Its memberships and their merge fields go with it; the contacts themselves stay in the workspace.",
		Action: "/audiences/" + a.ID + "/delete", Button: "Delete audience", Back: "/audiences/" + a.ID})
	return nil
}

func (x *Dashboard) deleteAudience(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.d.Contacts.DeleteAudience(r.Context(), s.key.WorkspaceID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/audiences?ok=audience-deleted")
}

func (x *Dashboard) confirmDeleteAutomation(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := x.d.Automations.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Delete the automation " + a.Name + "?",
		Text:   "Its versions and runs go with it, and runs waiting on a step stop. To pause it instead, disable it.",
		Action: "/automations/" + a.ID + "/delete", Button: "Delete automation", Back: "/automations/" + a.ID})
	return nil
}

func (x *Dashboard) deleteAutomation(w http.ResponseWriter, r *http.Request, s *session) error {
	if _, err := x.d.Automations.Delete(r.Context(), s.key.WorkspaceID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/automations?ok=automation-deleted")
}

// setAutomationEnabled switches an automation on or off, as PATCH {enabled}.
func (x *Dashboard) setAutomationEnabled(w http.ResponseWriter, r *http.Request, s *session) error {
	on := r.PostForm.Get("enabled") == "true"
	var a automations.Automation
	a, err := x.d.Automations.Update(r.Context(), s.key.WorkspaceID, r.PathValue("id"), &on, nil)
	if err != nil {
		return err
	}
	return redirect(w, r, "/automations/"+a.ID)
}

// confirmRevokeKey asks before revoking a key the session may see.
func (x *Dashboard) confirmRevokeKey(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	k, err := x.keyOf(r, s, id)
	if err != nil {
		return err
	}
	text := "Requests with it fail from the next one on. This cannot be undone."
	if id == s.key.ID {
		text = "It is the key of this session: you are signed out at once. " + text
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Revoke the key " + k.Name + "?", Text: text,
		Action: "/api-keys/" + id + "/revoke", Button: "Revoke key", Back: "/api-keys"})
	return nil
}

// keyOf finds a key (or sign-in session key) among those the session's key
// may list, as GET /v1/api-keys would show it.
func (x *Dashboard) keyOf(r *http.Request, s *session, id string) (workspaces.Key, error) {
	for _, list := range []func(context.Context, string, string) ([]workspaces.Key, error){x.d.Workspaces.ListKeys, x.d.Workspaces.SessionKeys} {
		ks, err := list(r.Context(), s.key.WorkspaceID, s.key.MailboxID)
		if err != nil {
			return workspaces.Key{}, err
		}
		for _, k := range ks {
			if k.ID == id {
				return k, nil
			}
		}
	}
	return workspaces.Key{}, errNotFound("API key")
}

// confirmRemoveSuppression asks before letting mail go to an address again.
func (x *Dashboard) confirmRemoveSuppression(w http.ResponseWriter, r *http.Request, s *session) error {
	sp, err := x.d.Suppressions.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Remove the suppression of " + sp.Email + "?",
		Text:   "Mail to the address is sent again. If it was suppressed for a bounce or a complaint, sending to it again can hurt your reputation.",
		Action: "/suppressions/" + sp.ID + "/remove", Button: "Remove suppression", Back: "/suppressions"})
	return nil
}

// addMember adds one address to an audience, as POST
// /v1/audiences/{id}/contacts with one row does.
func (x *Dashboard) addMember(w http.ResponseWriter, r *http.Request, s *session) error {
	f := r.PostForm
	row := contacts.ImportRow{Row: 1, Email: strings.TrimSpace(f.Get("email")), FirstName: strings.TrimSpace(f.Get("first_name")), LastName: strings.TrimSpace(f.Get("last_name"))}
	res, err := x.d.Contacts.Import(r.Context(), s.key.WorkspaceID, r.PathValue("id"), []contacts.ImportRow{row}, false)
	if err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return apierr.InvalidRequest("%s", res.Errors[0].Reason)
	}
	ok := "member-added"
	if len(res.Held) > 0 {
		ok = "member-held" // suppressed or unsubscribed before: added, not subscribed
	}
	return redirect(w, r, "/audiences/"+url.PathEscape(r.PathValue("id"))+"?ok="+ok)
}

func (x *Dashboard) confirmRemoveMember(w http.ResponseWriter, r *http.Request, s *session) error {
	aud := r.PathValue("id")
	m, err := x.d.Contacts.Member(r.Context(), s.key.WorkspaceID, aud, r.PathValue("member"))
	if err != nil {
		return err
	}
	back := "/audiences/" + url.PathEscape(aud)
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Remove " + m.Email + " from the audience?",
		Text:   "The membership goes; the contact stays in the workspace, and no unsubscribe is recorded, so the address can be added again.",
		Action: back + "/members/" + url.PathEscape(m.ID) + "/remove", Button: "Remove member", Back: back})
	return nil
}

// removeMember is DELETE /v1/audiences/{id}/contacts/{member}.
func (x *Dashboard) removeMember(w http.ResponseWriter, r *http.Request, s *session) error {
	aud := r.PathValue("id")
	if err := x.d.Contacts.DeleteMember(r.Context(), s.key.WorkspaceID, aud, r.PathValue("member")); err != nil {
		return err
	}
	return redirect(w, r, "/audiences/"+url.PathEscape(aud)+"?ok=member-removed")
}

func (x *Dashboard) confirmCancelBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	b, err := x.d.Broadcasts.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	text := "The recipients not yet handed over are skipped; what went out stays sent."
	if b.Status == broadcasts.StatusDraft {
		text = "The draft is dropped; nothing was sent."
	}
	back := "/broadcasts/" + url.PathEscape(b.ID)
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Cancel the broadcast " + b.Name + "?", Text: text,
		Action: back + "/cancel", Button: "Cancel broadcast", Back: back})
	return nil
}

// duplicateBroadcast makes a new draft "<name> (copy)" with a broadcast's
// content and recipients: POST /v1/broadcasts/{id}/duplicate's service call.
func (x *Dashboard) duplicateBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	c, err := x.d.Broadcasts.Duplicate(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return redirect(w, r, "/broadcasts/"+url.PathEscape(c.ID)+"?ok=duplicated")
}
