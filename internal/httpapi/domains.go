package httpapi

import (
	"encoding/json"
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/domains"
)

type domainJSON struct {
	ID                 string           `json:"id"`
	Domain             string           `json:"domain"`
	VerificationStatus string           `json:"verification_status"`
	Shared             bool             `json:"shared"`
	Records            []domains.Record `json:"records"`
	DKIMRecordsPending bool             `json:"dkim_records_pending"`
	DKIMStatus         string           `json:"dkim_status"`
	TrackingHost       *string          `json:"tracking_host"`
	CreatedAt          string           `json:"created_at"`
	VerifiedAt         *string          `json:"verified_at"`
	Name               string           `json:"name"` // domain again, where the Resend SDKs read it
}

// domainList carries the domains twice: domains (the spec) and data, where
// the Resend SDKs read a list (docs/decisions.md).
type domainList struct {
	Data    []domainJSON `json:"data"`
	Domains []domainJSON `json:"domains"`
	listMeta
}

type domainDeletedJSON struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

type createDomainRequest struct {
	Domain *string `json:"domain"`
	Name   *string `json:"name"` // Resend's spelling of domain
}

func domainOut(d *domains.Domain) domainJSON {
	return domainJSON{ID: d.ID, Domain: d.Name, Name: d.Name, VerificationStatus: d.Status, Shared: d.Shared, Records: d.Records,
		DKIMStatus: d.DKIMStatus(), TrackingHost: d.Tracking, CreatedAt: ts(d.CreatedAt), VerifiedAt: tsPtr(d.VerifiedAt)}
}

func (h *handler) listDomains(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	ds, err := h.d.Services.Domains.List(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := make([]domainJSON, 0, len(ds))
	for _, d := range ds {
		out = append(out, domainOut(d))
	}
	writeJSON(w, http.StatusOK, domainList{Domains: out, Data: out})
	return nil
}

func (h *handler) createDomain(w http.ResponseWriter, r *http.Request) error {
	var req createDomainRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Domain == nil {
		req.Domain = req.Name
	}
	if req.Domain == nil {
		return apierr.InvalidRequest("Field \"domain\" is required.")
	}
	d, err := h.d.Services.Domains.Create(r.Context(), apiKey(r).WorkspaceID, *req.Domain)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, domainOut(d))
	return nil
}

func (h *handler) getDomain(w http.ResponseWriter, r *http.Request) error {
	d, err := h.d.Services.Domains.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, domainOut(d))
	return nil
}

func (h *handler) deleteDomain(w http.ResponseWriter, r *http.Request) error {
	return h.removeDomain(w, r, r.PathValue("id"))
}

func (h *handler) deleteDomainByQuery(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("id")
	if id == "" {
		return apierr.InvalidRequest("Query parameter id is required.").WithNext("Prefer DELETE /v1/domains/{id}.")
	}
	return h.removeDomain(w, r, id)
}

func (h *handler) removeDomain(w http.ResponseWriter, r *http.Request, id string) error {
	if err := h.d.Services.Domains.Delete(r.Context(), apiKey(r).WorkspaceID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, domainDeletedJSON{ID: id, Deleted: true})
	return nil
}

type checkedJSON struct {
	domains.Record
	Found bool `json:"found"`
}

type verifyJSON struct {
	DKIMRecordsPending bool          `json:"dkim_records_pending"`
	DKIMStatus         string        `json:"dkim_status"`
	Domain             string        `json:"domain"`
	ID                 string        `json:"id"`
	Records            []checkedJSON `json:"records"`
	VerificationStatus string        `json:"verification_status"`
	Verified           bool          `json:"verified"`
}

func (h *handler) verifyDomain(w http.ResponseWriter, r *http.Request) error {
	v, err := h.d.Services.Domains.Verify(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	recs := make([]checkedJSON, len(v.Records))
	for i, c := range v.Records {
		recs[i] = checkedJSON{Record: c.Record, Found: c.Found}
	}
	writeJSON(w, http.StatusOK, verifyJSON{
		ID: v.Domain.ID, Domain: v.Domain.Name, Verified: v.Verified(), VerificationStatus: v.Domain.Status,
		Records: recs, DKIMRecordsPending: false, DKIMStatus: v.Domain.DKIMStatus(),
	})
	return nil
}

// trackingRequest reads { tracking_host: string | null } in the order the
// spec's rules need: a tracking switch is refused as such before the
// unknown-field check would call it a typo.
func trackingRequest(w http.ResponseWriter, r *http.Request) (*string, error) {
	body, err := readBody(w, r, maxBody)
	if err != nil {
		return nil, err
	}
	if err := checkJSONObject(body); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, jsonError(err)
	}
	for _, k := range []string{"open_tracking", "click_tracking"} {
		if _, ok := fields[k]; ok {
			return nil, apierr.Invalid422("tracking_switch_not_supported", "%s cannot be switched per domain.", k).
				WithNext("Choose tracking per email with track_opens / track_clicks; this route only sets tracking_host.")
		}
	}
	for k := range fields {
		if k != "tracking_host" {
			return nil, apierr.InvalidRequest("Unknown field %q.", k)
		}
	}
	raw, ok := fields["tracking_host"]
	if !ok {
		return nil, apierr.InvalidRequest("The body changes nothing: send tracking_host (a host name, or null for the shared host).")
	}
	if string(raw) == "null" {
		return nil, nil
	}
	var host string
	if err := json.Unmarshal(raw, &host); err != nil || host == "" {
		return nil, apierr.InvalidRequest("tracking_host must be a host name or null.")
	}
	return &host, nil
}

func (h *handler) patchDomain(w http.ResponseWriter, r *http.Request) error {
	host, err := trackingRequest(w, r)
	if err != nil {
		return err
	}
	d, err := h.d.Services.Domains.SetTrackingHost(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), host)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, domainOut(d))
	return nil
}

type trackingJSON struct {
	DomainID     string  `json:"domain_id"`
	TrackingHost *string `json:"tracking_host"`
	Host         string  `json:"host"`
	SharedHost   string  `json:"shared_host"`
	CNAMETarget  string  `json:"cname_target"`
	CNAMEFound   *bool   `json:"cname_found"`
}

func trackingOut(t *domains.Tracking) trackingJSON {
	host := t.SharedHost
	if t.Host != nil {
		host = *t.Host
	}
	return trackingJSON{DomainID: t.DomainID, TrackingHost: t.Host, Host: host, SharedHost: t.SharedHost,
		CNAMETarget: t.CNAMETarget, CNAMEFound: t.CNAMEFound}
}

func (h *handler) getTracking(w http.ResponseWriter, r *http.Request) error {
	t, err := h.d.Services.Domains.TrackingFor(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, trackingOut(t))
	return nil
}

func (h *handler) patchTracking(w http.ResponseWriter, r *http.Request) error {
	host, err := trackingRequest(w, r)
	if err != nil {
		return err
	}
	ws, id := apiKey(r).WorkspaceID, r.PathValue("id")
	if _, err := h.d.Services.Domains.SetTrackingHost(r.Context(), ws, id, host); err != nil {
		return err
	}
	t, err := h.d.Services.Domains.TrackingFor(r.Context(), ws, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, trackingOut(t))
	return nil
}
