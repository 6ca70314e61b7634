package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"mailroom/internal/apierr"
	"mailroom/internal/automations"
	"mailroom/internal/contacts"
	"mailroom/internal/domains"
	"mailroom/internal/sending"
	"mailroom/internal/suppressions"
	"mailroom/internal/templates"
	"mailroom/internal/webhooks"
	"mailroom/internal/workspaces"
)

// Services are the domain services behind the routes, filled in by app.
type Services struct {
	Sending      *sending.Service
	Domains      *domains.Service
	Webhooks     *webhooks.Service
	Suppressions *suppressions.Service
	Templates    *templates.Service
	Contacts     *contacts.Service
	Automations  *automations.Service
}

// Scope decisions where the spec says "not shown" are in docs/decisions.md:
// mail:send covers the emails routes (a send-only key reads the status of
// what it sent), mail:read the received-mail routes, workspace everything else.
const (
	public = ""                        // no key needed
	send   = workspaces.ScopeSend      // mail:send
	read   = workspaces.ScopeRead      // mail:read
	ws     = workspaces.ScopeWorkspace // workspace
)

// rootRoutes lists what the node serves outside /v1: probes, metrics and
// the hosted pages a browser opens (a GET only shows a page, because mail
// scanners fetch links; the POST its form makes acts).
func (h *handler) rootRoutes(mux *http.ServeMux, v1 http.Handler) {
	mux.Handle("/v1/", v1) // every route below in routes
	mux.HandleFunc("GET /healthz", h.healthz)
	mux.HandleFunc("GET /readyz", h.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.d.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /confirm/{token}", h.confirmPage) // double opt-in
	mux.HandleFunc("POST /confirm/{token}", h.confirmSubmit)
	mux.HandleFunc("/", h.noRoute)
}

// routes lists every /v1 route on one screen: pattern, scope, the error
// shape its family answers (spec "Errors / Body shapes"), handler.
func (h *handler) routes(t *routeTable) {
	t.handle("GET /v1/openapi.json", public, nested, h.openapi)

	t.handle("GET /v1/api-keys", ws, nested, h.listAPIKeys)
	t.handle("POST /v1/api-keys", ws, nested, h.createAPIKey)
	t.handle("DELETE /v1/api-keys/{id}", ws, nested, h.deleteAPIKey)

	// A key with only mail:send sees only the emails it sent.
	t.handle("POST /v1/emails", send, nested, h.createEmail)
	t.handle("POST /v1/emails/batch", send, nested, h.createEmailBatch)
	t.handle("GET /v1/emails", send, nested, h.listEmails)
	t.handle("GET /v1/emails/{id}", send, nested, h.getEmail)
	t.handle("PATCH /v1/emails/{id}", send, nested, h.rescheduleEmail)
	t.handle("POST /v1/emails/{id}/cancel", send, nested, h.cancelEmail)
	t.handle("DELETE /v1/messages/scheduled/{id}", send, nested, h.cancelScheduled) // older spelling of cancel

	t.handle("GET /v1/domains", ws, nested, h.listDomains)
	t.handle("POST /v1/domains", ws, nested, h.createDomain)
	t.handle("DELETE /v1/domains", ws, nested, h.deleteDomainByQuery) // deprecated ?id=
	t.handle("GET /v1/domains/{id}", ws, nested, h.getDomain)
	t.handle("PATCH /v1/domains/{id}", ws, nested, h.patchDomain)
	t.handle("DELETE /v1/domains/{id}", ws, nested, h.deleteDomain)
	t.handle("POST /v1/domains/{id}/verify", ws, nested, h.verifyDomain)
	t.handle("GET /v1/domains/{id}/tracking", ws, nested, h.getTracking)
	t.handle("PATCH /v1/domains/{id}/tracking", ws, nested, h.patchTracking)

	t.handle("GET /v1/webhooks", ws, nested, h.listWebhooks)
	t.handle("POST /v1/webhooks", ws, nested, h.createWebhook)
	t.handle("PATCH /v1/webhooks", ws, nested, h.updateWebhook)  // deprecated ?id=
	t.handle("DELETE /v1/webhooks", ws, nested, h.deleteWebhook) // deprecated ?id=
	t.handle("GET /v1/webhooks/deliveries", ws, nested, h.listWebhookDeliveries)
	t.handle("POST /v1/webhooks/deliveries", ws, nested, h.sendWebhookDelivery)
	t.handle("GET /v1/webhooks/{id}", ws, nested, h.getWebhook)
	t.handle("PATCH /v1/webhooks/{id}", ws, nested, h.updateWebhook)
	t.handle("DELETE /v1/webhooks/{id}", ws, nested, h.deleteWebhook)

	t.handle("GET /v1/suppressions", ws, flat, h.listSuppressions)
	t.handle("POST /v1/suppressions", ws, flat, h.createSuppression)
	t.handle("DELETE /v1/suppressions/{id}", ws, flat, h.deleteSuppression)
	t.handle("DELETE /v1/suppressions", ws, flat, h.deleteSuppressionQuery) // ?email= or the older ?id=

	t.handle("GET /v1/templates", ws, flat, h.listTemplates)
	t.handle("POST /v1/templates", ws, flat, h.createTemplate)
	t.handle("GET /v1/templates/{id}", ws, flat, h.getTemplate)
	t.handle("PATCH /v1/templates/{id}", ws, flat, h.updateTemplate)
	t.handle("DELETE /v1/templates/{id}", ws, flat, h.deleteTemplate)
	t.handle("GET /v1/templates/{id}/versions", ws, flat, h.listTemplateVersions)
	t.handle("POST /v1/templates/{id}/versions", ws, flat, h.createTemplateVersion)
	t.handle("POST /v1/templates/{id}/publish", ws, flat, h.publishTemplate)
	t.handle("POST /v1/templates/{id}/render", ws, flat, h.renderTemplate)
	t.handle("POST /v1/templates/{id}/preview", ws, flat, h.previewTemplate)

	t.handle("GET /v1/audiences", ws, nested, h.listAudiences)
	t.handle("POST /v1/audiences", ws, nested, h.createAudience)
	t.handle("GET /v1/audiences/{id}", ws, nested, h.getAudience)
	t.handle("PATCH /v1/audiences/{id}", ws, nested, h.patchAudience)
	t.handle("DELETE /v1/audiences/{id}", ws, nested, h.deleteAudience) // soft: memberships stay on record
	t.handle("GET /v1/audiences/{id}/contacts", ws, nested, h.listMembers)
	t.handle("POST /v1/audiences/{id}/contacts", ws, nested, h.importContacts)
	t.handle("GET /v1/audiences/{id}/contacts/{member}", ws, nested, h.getMember)
	t.handle("PATCH /v1/audiences/{id}/contacts/{member}", ws, nested, h.patchMember)
	t.handle("DELETE /v1/audiences/{id}/contacts/{member}", ws, nested, h.deleteMember) // records no unsubscribe
	t.handle("POST /v1/audiences/{id}/contacts/{member}/confirm", ws, nested, h.sendConfirmation)

	t.handle("GET /v1/contacts", ws, flat, h.listContacts)
	t.handle("POST /v1/contacts", ws, flat, h.createContact)
	t.handle("GET /v1/contacts/duplicates", ws, flat, h.listDuplicates)
	t.handle("POST /v1/contacts/duplicates", ws, flat, h.mergeDuplicates) // { survivor_id, loser_id }
	t.handle("GET /v1/contacts/{id}", ws, flat, h.getContact)
	t.handle("PATCH /v1/contacts/{id}", ws, flat, h.patchContact)
	t.handle("DELETE /v1/contacts/{id}", ws, flat, h.deleteContact)
	t.handle("GET /v1/contacts/{id}/tags", ws, nested, h.getContactTags)
	t.handle("POST /v1/contacts/{id}/tags", ws, nested, h.addContactTags)
	t.handle("DELETE /v1/contacts/{id}/tags", ws, nested, h.removeContactTag) // ?tag=
	t.handle("GET /v1/contacts/{id}/attributes", ws, nested, h.getContactAttributes)
	t.handle("PATCH /v1/contacts/{id}/attributes", ws, nested, h.patchContactAttributes)
	t.handle("GET /v1/contacts/{id}/subscriptions", ws, nested, h.getContactSubscriptions)

	// {id} also matches {id}.yaml (ServeMux cannot split one segment): GET
	// answers the YAML as stored, PUT on {id}.yaml writes a new version.
	t.handle("GET /v1/automations", ws, nested, h.listAutomations)
	t.handle("POST /v1/automations", ws, nested, h.createAutomation)      // raw YAML or { yaml }
	t.handle("GET /v1/automations/{id}", ws, nested, h.getAutomation)     // and {id}.yaml
	t.handle("PUT /v1/automations/{id}", ws, nested, h.putAutomationYAML) // only {id}.yaml
	t.handle("PATCH /v1/automations/{id}", ws, nested, h.patchAutomation)
	t.handle("DELETE /v1/automations/{id}", ws, nested, h.deleteAutomation)
	t.handle("GET /v1/automations/{id}/versions", ws, nested, h.listAutomationVersions)
	t.handle("POST /v1/automations/{id}/versions", ws, nested, h.restoreAutomationVersion) // { version_id }

	// Unknown routes (and a known path with another method) answer
	// not_found in the shape of their family; the families without routes
	// yet are listed so that their shape is already right.
	t.unknown("/v1/", nested)
	t.unknown("/v1/suppressions", flat)
	t.unknown("/v1/topics", flat)
	t.unknown("/v1/templates", flat)
	t.unknown("/v1/contacts", flat)
	t.unknown("/v1/contacts/{id}/tags", nested)
	t.unknown("/v1/contacts/{id}/attributes", nested)
	t.unknown("/v1/contacts/{id}/subscriptions", nested)
}

func errNoRoute() error {
	return apierr.New(http.StatusNotFound, "not_found", "No such route.").WithNext("See /v1/openapi.json for the routes this server offers.")
}
