package dashboard

import (
	"net/http"

	"mailroom/internal/contacts"
)

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
