package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/automations"
)

// maxAutomationBody caps what an automation route reads: twice the 1 MB of
// other routes, so that a document over the definition limit
// (automations.MaxYAMLBytes) is refused as invalid_automation with its line
// rather than as a bare request_too_large.
const maxAutomationBody = 2 << 20

type automationYAMLRequest struct {
	YAML *string `json:"yaml"` // required, unless steps
	// The Resend SDKs' create: a step graph, written as YAML where it maps
	// (automations.FromGraph), and its status (enabled or disabled).
	Name        *string                       `json:"name"`
	Status      *string                       `json:"status"`
	Steps       []automations.GraphStep       `json:"steps"`
	Connections []automations.GraphConnection `json:"connections"`
}

// source is the definition the request holds, and whether it starts enabled.
func (req automationYAMLRequest) source() ([]byte, bool, error) {
	enabled := true
	if req.Status != nil {
		if *req.Status != "enabled" && *req.Status != "disabled" {
			return nil, false, apierr.InvalidRequest("status must be enabled or disabled.")
		}
		enabled = *req.Status == "enabled"
	}
	switch {
	case req.YAML != nil && (req.Steps != nil || req.Name != nil || req.Connections != nil):
		return nil, false, apierr.InvalidRequest("Send yaml, or the Resend SDKs' name, steps and connections, not both.")
	case req.YAML != nil:
		return []byte(*req.YAML), enabled, nil
	case req.Steps != nil:
		name := ""
		if req.Name != nil {
			name = *req.Name
		}
		src, err := automations.FromGraph(name, req.Steps, req.Connections)
		return src, enabled, err
	}
	return nil, false, apierr.InvalidRequest("yaml is required: send { \"yaml\": \"name: ...\" } or the YAML itself as application/yaml.")
}

type patchAutomationRequest struct {
	Enabled *bool   `json:"enabled"`
	YAML    *string `json:"yaml"`
	Status  *string `json:"status"` // Resend's enabled or disabled, for enabled
}

type restoreVersionRequest struct {
	VersionID *string `json:"version_id"` // required
}

type automationJSON struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Slug      string  `json:"slug"`
	Trigger   string  `json:"trigger"`
	Enabled   bool    `json:"enabled"`
	Version   int     `json:"version"`
	YAML      string  `json:"yaml,omitempty"` // not in lists
	LastError *string `json:"last_error"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

// automationDetailJSON is the single read (and the answer of writes): the
// automation with its graph and trigger_url (null unless api.call).
type automationDetailJSON struct {
	Object string `json:"object"` // "automation", where the Resend SDKs read it
	automationJSON
	TriggerURL *string           `json:"trigger_url"`
	Graph      automations.Graph `json:"graph"`
	// SigningSecret signs the webhook steps' posts (x-svc-signature), as
	// an endpoint's secret signs event deliveries.
	SigningSecret string `json:"signing_secret,omitempty"`
}

type automationListJSON struct {
	Automations []automationJSON `json:"automations"`
	listMeta
}

type automationVersionJSON struct {
	ID        string `json:"id"`
	Version   int    `json:"version"`
	YAML      string `json:"yaml"`
	CreatedAt string `json:"created_at"`
}

type automationVersionsJSON struct {
	AutomationID string                  `json:"automation_id"`
	Version      int                     `json:"version"`
	Versions     []automationVersionJSON `json:"versions"`
	listMeta
}

func automationOut(a automations.Automation) automationJSON {
	return automationJSON{ID: a.ID, Name: a.Name, Slug: a.Slug, Trigger: a.Trigger, Enabled: a.Enabled, Version: a.Version,
		YAML: a.YAML, LastError: a.LastError, CreatedAt: ts(a.CreatedAt), UpdatedAt: ts(a.UpdatedAt)}
}

// automationFull is the single read: with graph and trigger_url.
func (h *handler) automationFull(a automations.Automation) automationDetailJSON {
	out := automationDetailJSON{Object: "automation", automationJSON: automationOut(a), Graph: a.Definition().Graph(), SigningSecret: a.SigningSecret}
	if u := h.d.Services.Automations.TriggerURL(a); u != "" {
		out.TriggerURL = &u
	}
	return out
}

// readAutomationBody reads a definition: raw YAML (a YAML or text/plain
// content type) or a JSON object {yaml}. Without a content type, a body
// that is a JSON object is the wrapper and anything else is YAML.
func readAutomationBody(w http.ResponseWriter, r *http.Request, jsonAllowed bool) ([]byte, bool, error) {
	kind := "raw"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			return nil, false, apierr.InvalidRequest("Content-Type %q does not parse.", ct)
		case mt == "application/json" || strings.HasSuffix(mt, "+json"):
			kind = "json"
		case mt == "text/plain" || strings.HasSuffix(mt, "/yaml") || strings.HasSuffix(mt, "/x-yaml") || strings.HasSuffix(mt, "+yaml"):
		default:
			return nil, false, apierr.InvalidRequest("Content-Type %q is not accepted; send the YAML as application/yaml or text/plain, or JSON { \"yaml\": ... }.", ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAutomationBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, false, errTooLarge
		}
		return nil, false, bodyError(err)
	}
	if kind == "raw" && r.Header.Get("Content-Type") == "" && jsonAllowed {
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' && json.Valid(t) {
			kind = "json"
		}
	}
	if kind == "json" {
		if !jsonAllowed {
			return body, true, nil // a JSON document is YAML too
		}
		var req automationYAMLRequest
		if err := decodeJSON(body, &req); err != nil {
			return nil, false, err
		}
		return req.source()
	}
	return body, true, nil
}

func (h *handler) createAutomation(w http.ResponseWriter, r *http.Request) error {
	src, enabled, err := readAutomationBody(w, r, true)
	if err != nil {
		return err
	}
	a, err := h.d.Services.Automations.CreateEnabled(r.Context(), apiKey(r).WorkspaceID, src, enabled)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, h.automationFull(a))
	return nil
}

func (h *handler) listAutomations(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	as, err := h.d.Services.Automations.List(r.Context(), apiKey(r).WorkspaceID)
	if err != nil {
		return err
	}
	out := automationListJSON{Automations: make([]automationJSON, 0, len(as))}
	for _, a := range as {
		j := automationOut(a)
		j.YAML = ""
		out.Automations = append(out.Automations, j)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// yamlRef tells GET and PUT /v1/automations/{id}.yaml from {id}: ServeMux
// cannot match a suffix inside one segment, so the {id} routes look at it.
func yamlRef(r *http.Request) (string, bool) {
	id := r.PathValue("id")
	ref, ok := strings.CutSuffix(id, ".yaml")
	return ref, ok && ref != ""
}

// getAutomation answers GET /v1/automations/{id} and, for {id}.yaml, the
// current version's YAML as stored.
func (h *handler) getAutomation(w http.ResponseWriter, r *http.Request) error {
	ref, asYAML := yamlRef(r)
	if !asYAML {
		ref = r.PathValue("id")
	}
	a, err := h.d.Services.Automations.Get(r.Context(), apiKey(r).WorkspaceID, ref)
	if err != nil {
		return err
	}
	if asYAML {
		writeAutomationYAML(w, a)
		return nil
	}
	writeJSON(w, http.StatusOK, h.automationFull(a))
	return nil
}

func writeAutomationYAML(w http.ResponseWriter, a automations.Automation) {
	v := strconv.Itoa(a.Version)
	w.Header().Set("Content-Type", "text/yaml; charset=utf-8")
	w.Header().Set("x-svc-automation-version", v)
	w.Header().Set("X-Mailroom-Automation-Version", v)
	w.Header().Set("Content-Length", strconv.Itoa(len(a.YAML)))
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, a.YAML)
}

// putAutomationYAML answers PUT /v1/automations/{id}.yaml: the raw body is
// the new version. PUT on a bare {id} is no route.
func (h *handler) putAutomationYAML(w http.ResponseWriter, r *http.Request) error {
	ref, ok := yamlRef(r)
	if !ok {
		return errNoRoute()
	}
	src, _, err := readAutomationBody(w, r, false)
	if err != nil {
		return err
	}
	a, err := h.d.Services.Automations.Update(r.Context(), apiKey(r).WorkspaceID, ref, nil, src)
	if err != nil {
		return err
	}
	writeAutomationYAML(w, a)
	return nil
}

func (h *handler) patchAutomation(w http.ResponseWriter, r *http.Request) error {
	var req patchAutomationRequest
	body, err := readBody(w, r, maxAutomationBody)
	if err != nil {
		return err
	}
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if req.Status != nil {
		on := *req.Status == "enabled"
		if !on && *req.Status != "disabled" {
			return apierr.InvalidRequest("status must be enabled or disabled.")
		}
		if req.Enabled != nil && *req.Enabled != on {
			return apierr.InvalidRequest("enabled and status disagree; pass one.")
		}
		req.Enabled = &on
	}
	if req.Enabled == nil && req.YAML == nil {
		return apierr.InvalidRequest("Nothing to update: send enabled, yaml or both.")
	}
	var src []byte
	if req.YAML != nil {
		src = []byte(*req.YAML)
	}
	a, err := h.d.Services.Automations.Update(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), req.Enabled, src)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.automationFull(a))
	return nil
}

func (h *handler) deleteAutomation(w http.ResponseWriter, r *http.Request) error {
	id, err := h.d.Services.Automations.Delete(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedJSON{Deleted: id})
	return nil
}

func (h *handler) listAutomationVersions(w http.ResponseWriter, r *http.Request) error {
	if err := h.pager.whole(r); err != nil {
		return err
	}
	a, vs, err := h.d.Services.Automations.Versions(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := automationVersionsJSON{AutomationID: a.ID, Version: a.Version, Versions: make([]automationVersionJSON, 0, len(vs))}
	for _, v := range vs {
		out.Versions = append(out.Versions, automationVersionJSON{ID: v.ID, Version: v.Version, YAML: v.YAML, CreatedAt: ts(v.CreatedAt)})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) restoreAutomationVersion(w http.ResponseWriter, r *http.Request) error {
	var req restoreVersionRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.VersionID == nil || *req.VersionID == "" {
		return apierr.InvalidRequest("version_id is required: the id of one of GET /v1/automations/{id}/versions.")
	}
	a, err := h.d.Services.Automations.Restore(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), *req.VersionID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, h.automationFull(a))
	return nil
}

// duplicateAutomation copies an automation, disabled (the Resend SDKs'
// automations.duplicate).
func (h *handler) duplicateAutomation(w http.ResponseWriter, r *http.Request) error {
	a, err := h.d.Services.Automations.Duplicate(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, copiedJSON{Object: "automation", ID: a.ID, Name: a.Name})
	return nil
}

type stoppedJSON struct {
	Object string `json:"object"`
	ID     string `json:"id"`
	Status string `json:"status"`
}

// stopAutomation is the Resend SDKs' automations.stop: it disables the
// automation (PATCH {enabled: false}); runs already started carry on.
func (h *handler) stopAutomation(w http.ResponseWriter, r *http.Request) error {
	off := false
	a, err := h.d.Services.Automations.Update(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), &off, nil)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, stoppedJSON{Object: "automation", ID: a.ID, Status: "disabled"})
	return nil
}
