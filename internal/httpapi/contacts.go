package httpapi

import (
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
)

type createContactRequest struct {
	Vcard      *string           `json:"vcard"` // vCard mode: up to 1000 cards, nothing else
	Email      *string           `json:"email"` // required in field mode
	FirstName  *string           `json:"first_name"`
	LastName   *string           `json:"last_name"`
	Attributes map[string]string `json:"attributes"`
	Tags       []string          `json:"tags"`
}

type patchContactRequest struct {
	ID           *string            `json:"id"`           // the Resend SDKs repeat the contact's id (or "")
	Unsubscribed *bool              `json:"unsubscribed"` // Resend's: true unsubscribes from every audience
	Email        *string            `json:"email"`
	FirstName    *string            `json:"first_name"`
	LastName     *string            `json:"last_name"`
	Attributes   map[string]*string `json:"attributes"` // merge patch: null clears a name
	Tags         *[]string          `json:"tags"`       // replaces the set
}

type contactJSON struct {
	Attributes map[string]string `json:"attributes"`
	CreatedAt  string            `json:"created_at"`
	Email      string            `json:"email"`
	FirstName  string            `json:"first_name"`
	ID         string            `json:"id"`
	LastName   string            `json:"last_name"`
	Tags       []string          `json:"tags"`
	UpdatedAt  string            `json:"updated_at"`
}

type contactList struct {
	Contacts   []contactJSON `json:"contacts"`
	HasMore    bool          `json:"has_more"`
	NextCursor *string       `json:"next_cursor"`
}

type contactDeleted struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

type tagsRequest struct {
	Tags []string `json:"tags"`
	Tag  *string  `json:"tag"`
}

type tagsJSON struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed,omitempty"`
	Tags    []string `json:"tags"`
}

type attributesJSON struct {
	Attributes map[string]string `json:"attributes"`
	Changed    []string          `json:"changed"`
}

func contactOut(c contacts.Contact) contactJSON {
	return contactJSON{ID: c.ID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName,
		Attributes: c.Attributes, Tags: c.Tags, CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt)}
}

// contactEmail parses an address a caller gives for a contact.
// byContactRef lets a contact route take the contact's address where its
// id goes, as the Resend SDKs pass either: a segment with an @ is an
// address (422 when it is not one), read and replaced by the contact's id.
func (h *handler) byContactRef(next func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		seg := r.PathValue("id")
		if !strings.Contains(seg, "@") {
			return next(w, r)
		}
		e, err := contacts.NormalizeEmail(seg)
		if err != nil {
			return apierr.Invalid422("invalid_email", "%q is not an email address: %s.", clipParam(seg), err.Error())
		}
		c, err := h.d.Services.Contacts.ContactByEmail(r.Context(), apiKey(r).WorkspaceID, e)
		if err != nil {
			return err
		}
		r.SetPathValue("id", c.ID)
		return next(w, r)
	}
}

func contactEmail(field, s string) (string, error) {
	e, err := contacts.NormalizeEmail(s)
	if err != nil {
		return "", apierr.InvalidRequest("%s %s.", field, err.Error())
	}
	return e, nil
}

func (h *handler) listContacts(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 50, 200, false)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := contacts.ListFilter{Q: strings.TrimSpace(q.Get("q"))}
	if err := contacts.CheckSearchTerm(f.Q); err != nil {
		return err
	}
	if v := q.Get("lookup"); v != "" {
		if f.Lookup, err = contactEmail("lookup", v); err != nil {
			return err
		}
	}
	var pos *contacts.Position
	if pg.After != nil {
		pos = &contacts.Position{At: pg.After.At, ID: pg.After.ID}
	}
	rows, err := h.d.Services.Contacts.List(r.Context(), apiKey(r).WorkspaceID, f, pg.Limit+1, pos)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(rows), func(i int) Cursor {
		return Cursor{At: rows[i].CreatedAt.UnixMilli(), ID: rows[i].ID}
	})
	if wantsVCard(r) {
		b, err := contacts.EncodeVCards(rows[:n])
		if err != nil {
			return err
		}
		if meta.NextCursor != nil {
			w.Header().Set("X-Next-Cursor", *meta.NextCursor) // the .vcf has no room for it
		}
		w.Header().Set("Content-Type", "text/vcard; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="contacts.vcf"`)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return nil
	}
	out := make([]contactJSON, 0, n)
	for _, c := range rows[:n] {
		out = append(out, contactOut(c))
	}
	writeJSON(w, http.StatusOK, contactList{Contacts: out, HasMore: meta.HasMore, NextCursor: meta.NextCursor})
	return nil
}

func (h *handler) createContact(w http.ResponseWriter, r *http.Request) error {
	var req createContactRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Vcard != nil {
		if req.Email != nil || req.FirstName != nil || req.LastName != nil || req.Attributes != nil || req.Tags != nil {
			return apierr.InvalidRequest("Send vcard alone, or the contact's fields without vcard.")
		}
		return h.createContactsFromVCard(w, r, *req.Vcard)
	}
	if req.Email == nil || strings.TrimSpace(*req.Email) == "" {
		return apierr.InvalidRequest("email is required.")
	}
	email, err := contactEmail("email", *req.Email)
	if err != nil {
		return err
	}
	in := contacts.NewContact{Email: email, Attributes: req.Attributes, Tags: req.Tags}
	if req.FirstName != nil {
		in.FirstName = *req.FirstName
	}
	if req.LastName != nil {
		in.LastName = *req.LastName
	}
	c, err := h.d.Services.Contacts.Create(r.Context(), apiKey(r).WorkspaceID, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, contactOut(c))
	return nil
}

func (h *handler) getContact(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Services.Contacts.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactOut(c))
	return nil
}

func (h *handler) patchContact(w http.ResponseWriter, r *http.Request) error {
	var req patchContactRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.ID != nil && *req.ID != "" && *req.ID != r.PathValue("id") {
		return apierr.InvalidRequest("id does not match the contact in the path.")
	}
	if req.Unsubscribed != nil && !*req.Unsubscribed {
		return apierr.InvalidRequest("unsubscribed: false cannot resubscribe an address.").
			WithNext("Subscribe it again through an audience (PATCH /v1/audiences/{id}/contacts/{member}).")
	}
	if req.Unsubscribed != nil {
		c, err := h.d.Services.Contacts.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
		if err != nil {
			return err
		}
		if _, err := h.d.Services.Contacts.UnsubscribeEverywhere(r.Context(), apiKey(r).WorkspaceID, c.Email); err != nil {
			return err
		}
	}
	p := contacts.ContactPatch{FirstName: req.FirstName, LastName: req.LastName, Attributes: req.Attributes, Tags: req.Tags}
	if req.Email != nil {
		e, err := contactEmail("email", *req.Email)
		if err != nil {
			return err
		}
		p.Email = &e
	}
	c, err := h.d.Services.Contacts.Update(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactOut(c))
	return nil
}

func (h *handler) deleteContact(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.d.Services.Contacts.Delete(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contactDeleted{ID: id, Deleted: true})
	return nil
}

func (h *handler) getContactTags(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Services.Contacts.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tagsJSON{Tags: c.Tags, Added: []string{}})
	return nil
}

func (h *handler) addContactTags(w http.ResponseWriter, r *http.Request) error {
	var req tagsRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	tags := req.Tags
	switch {
	case req.Tag != nil && req.Tags != nil:
		return apierr.InvalidRequest("Send tags (an array) or tag (one), not both.")
	case req.Tag != nil:
		tags = []string{*req.Tag}
	case req.Tags == nil:
		return apierr.InvalidRequest("Send tags (an array) or tag (one).")
	}
	ch, err := h.d.Services.Contacts.AddTags(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), tags)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tagsJSON{Tags: ch.Tags, Added: ch.Added})
	return nil
}

func (h *handler) removeContactTag(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if !q.Has("tag") {
		return apierr.InvalidRequest("Name the tag to remove as ?tag=.")
	}
	ch, err := h.d.Services.Contacts.RemoveTag(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), q.Get("tag"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tagsJSON{Tags: ch.Tags, Added: ch.Added, Removed: ch.Removed})
	return nil
}

func (h *handler) getContactAttributes(w http.ResponseWriter, r *http.Request) error {
	c, err := h.d.Services.Contacts.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, attributesJSON{Attributes: c.Attributes, Changed: []string{}})
	return nil
}

func (h *handler) patchContactAttributes(w http.ResponseWriter, r *http.Request) error {
	var patch map[string]*string
	if err := decodeRequest(w, r, &patch); err != nil {
		return err
	}
	attrs, changed, err := h.d.Services.Contacts.PatchAttributes(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), patch)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, attributesJSON{Attributes: attrs, Changed: changed})
	return nil
}

type subscriptionsJSON struct {
	ContactID     string             `json:"contact_id"`
	Subscriptions []subscriptionJSON `json:"subscriptions"`
}

type subscriptionJSON struct {
	Audiences         []audienceSubscriptionJSON `json:"audiences"`
	Email             string                     `json:"email"`
	Suppressed        bool                       `json:"suppressed"`
	SuppressionReason *string                    `json:"suppression_reason"`
	Topics            []string                   `json:"topics"`
}

type audienceSubscriptionJSON struct {
	AudienceID   string `json:"audience_id"`
	MembershipID string `json:"membership_id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
}

func (h *handler) getContactSubscriptions(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	subs, err := h.d.Services.Contacts.Subscriptions(r.Context(), apiKey(r).WorkspaceID, id)
	if err != nil {
		return err
	}
	out := subscriptionsJSON{ContactID: id, Subscriptions: make([]subscriptionJSON, 0, len(subs))}
	for _, s := range subs {
		sj := subscriptionJSON{Email: s.Email, Suppressed: s.Suppressed, Topics: s.Topics, Audiences: make([]audienceSubscriptionJSON, 0, len(s.Audiences))}
		if s.Reason != "" {
			reason := s.Reason
			sj.SuppressionReason = &reason
		}
		for _, a := range s.Audiences {
			sj.Audiences = append(sj.Audiences, audienceSubscriptionJSON{AudienceID: a.AudienceID, Name: a.AudienceName, MembershipID: a.MembershipID, Status: a.Status})
		}
		out.Subscriptions = append(out.Subscriptions, sj)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type vcardCreated struct {
	Contacts []contactJSON   `json:"contacts"`
	Skipped  []vcardSkipJSON `json:"skipped"`
}

type vcardSkipJSON struct {
	Card   int    `json:"card"`
	Email  string `json:"email"`
	Reason string `json:"reason"`
}

func (h *handler) createContactsFromVCard(w http.ResponseWriter, r *http.Request, text string) error {
	in, err := contacts.ParseVCards(text)
	if err != nil {
		return err
	}
	created, skipped, err := h.d.Services.Contacts.CreateMany(r.Context(), apiKey(r).WorkspaceID, in)
	if err != nil {
		return err
	}
	out := vcardCreated{Contacts: make([]contactJSON, 0, len(created)), Skipped: make([]vcardSkipJSON, 0, len(skipped))}
	for _, c := range created {
		out.Contacts = append(out.Contacts, contactOut(c))
	}
	for _, s := range skipped {
		out.Skipped = append(out.Skipped, vcardSkipJSON{Card: s.Card, Email: s.Email, Reason: s.Reason})
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// wantsVCard reports whether the client asked for a .vcf (Accept: text/vcard).
func wantsVCard(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/vcard") || strings.EqualFold(strings.TrimSpace(mt), "text/x-vcard") {
			return true
		}
	}
	return false
}
