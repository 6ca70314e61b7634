package dashboard

import (
	"net/http"

	"mailroom/internal/automations"
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
