package dashboard

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"mailroom/internal/contacts"
)

// contactsView is the workspace's contacts, searched as GET /v1/contacts?q=.
type contactsView struct {
	Q        string
	Contacts []contacts.Contact
	Paged    bool
	Next     string
}

func (x *Dashboard) contacts(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	v := contactsView{Q: strings.TrimSpace(q.Get("q"))}
	var pos *contacts.Position
	if after := q.Get("after"); after != "" {
		ms, id, err := parseCursor(after)
		if err != nil {
			return err
		}
		pos, v.Paged = &contacts.Position{At: ms, ID: id}, true
	}
	cs, err := x.d.Contacts.List(r.Context(), s.key.WorkspaceID, contacts.ListFilter{Q: v.Q}, listRows+1, pos)
	if err != nil {
		return err
	}
	if len(cs) > listRows {
		cs = cs[:listRows]
		last := cs[len(cs)-1]
		v.Next = urlValues{"q": v.Q, "after": cursor(last.CreatedAt.UnixMilli(), last.ID)}.encode()
	}
	v.Contacts = cs
	x.render(w, r, s, http.StatusOK, "contacts", v)
	return nil
}

// contactView is one contact with where it belongs.
type contactView struct {
	Contact       contacts.Contact
	Attributes    []header // sorted by name
	Subscriptions []contacts.Subscription
}

// contact shows a contact: its fields, attributes and tags, and per address
// whether it is suppressed and which audiences and topics it is in (GET
// /v1/contacts/{id} and its subscriptions).
func (x *Dashboard) contact(w http.ResponseWriter, r *http.Request, s *session) error {
	c, err := x.d.Contacts.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	subs, err := x.d.Contacts.Subscriptions(r.Context(), s.key.WorkspaceID, c.ID)
	if err != nil {
		return err
	}
	v := contactView{Contact: c, Subscriptions: subs}
	for _, k := range slices.Sorted(maps.Keys(c.Attributes)) {
		v.Attributes = append(v.Attributes, header{k, c.Attributes[k]})
	}
	x.render(w, r, s, http.StatusOK, "contact", v)
	return nil
}
