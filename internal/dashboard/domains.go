package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"mailroom/internal/domains"
)

// recordPurpose says what each kind of record is for, beside it.
func recordPurpose(r domains.Record, domain string) string {
	switch r.Record {
	case domains.RecordMX:
		if r.Name == domain {
			return "Receives mail sent to this domain here (optional: only for inbound mail)."
		}
		return "Receives bounces and complaints for mail you send, so they are recorded."
	case domains.RecordDKIM:
		return "Publishes a key that signs your mail (DKIM), so receivers know it is yours and unchanged."
	case domains.RecordSPF:
		return "Authorises this service to send with your bounce address (SPF)."
	case domains.RecordDMARC:
		return "Tells receivers what to do with mail that fails SPF and DKIM (DMARC)."
	case domains.RecordOwnership:
		return "Proves you control the domain."
	}
	return ""
}

// recordView is a record with what it is for. It is not embedded:
// domains.Record's own field Record would then name the whole struct.
type recordView struct {
	Rec     domains.Record
	Purpose string
}

type domainView struct {
	Domain  *domains.Domain
	Records []recordView
}

func (x *Dashboard) domains(w http.ResponseWriter, r *http.Request, s *session) error {
	list, err := x.d.Domains.List(r.Context(), s.key.WorkspaceID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "domains", list)
	return nil
}

func (x *Dashboard) addDomain(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := x.d.Domains.Create(r.Context(), s.key.WorkspaceID, strings.TrimSpace(r.PostForm.Get("domain")))
	if err != nil {
		return err
	}
	return redirect(w, r, "/domains/"+url.PathEscape(d.ID)+"?ok=domain")
}

func (x *Dashboard) showDomain(w http.ResponseWriter, r *http.Request, s *session, d *domains.Domain) {
	v := domainView{Domain: d}
	for _, rec := range d.Records {
		v.Records = append(v.Records, recordView{Rec: rec, Purpose: recordPurpose(rec, d.Name)})
	}
	x.render(w, r, s, http.StatusOK, "domain", v)
}

func (x *Dashboard) domain(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := x.d.Domains.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.showDomain(w, r, s, d)
	return nil
}

// verifyDomain looks the records up now and shows what it found (the
// answer is the page, not a redirect: the statuses are the result).
func (x *Dashboard) verifyDomain(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := x.d.Domains.Verify(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.showDomain(w, r, s, v.Domain) // its records carry the statuses just found
	return nil
}

// confirmDeleteDomain asks before removing a domain.
func (x *Dashboard) confirmDeleteDomain(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := x.d.Domains.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "confirm", confirmView{Title: "Remove " + d.Name + "?",
		Text:   "Mail can no longer be sent from it, and its DKIM keys are deleted; adding it again gives new records to publish.",
		Action: "/domains/" + d.ID + "/delete", Button: "Remove domain", Back: "/domains/" + d.ID})
	return nil
}

// deleteDomain removes a domain, as DELETE /v1/domains/{id} does (its
// refusals, such as domain_in_use, come back as the API gives them).
func (x *Dashboard) deleteDomain(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.d.Domains.Delete(r.Context(), s.key.WorkspaceID, r.PathValue("id")); err != nil {
		return err
	}
	return redirect(w, r, "/domains?ok=domain-deleted")
}
