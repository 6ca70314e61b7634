package httpapi

import (
	"net/http"

	"mailroom/internal/delivery"

	"mailroom/internal/analytics"
	"mailroom/internal/apierr"
	"mailroom/internal/automations"
	"mailroom/internal/broadcasts"
	"mailroom/internal/capture"
	"mailroom/internal/contacts"
	"mailroom/internal/domains"
	"mailroom/internal/inbound"
	"mailroom/internal/policy"
	"mailroom/internal/requestlog"
	"mailroom/internal/segments"
	"mailroom/internal/sending"
	"mailroom/internal/suppressions"
	"mailroom/internal/templates"
	"mailroom/internal/topics"
	"mailroom/internal/tracking"
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
	Topics       *topics.Service
	Contacts     *contacts.Service
	Analytics    *analytics.Service
	Tracking     *tracking.Service
	Policy       *policy.Service
	Segments     *segments.Service
	Broadcasts   *broadcasts.Service
	Inbound      *inbound.Service
	Automations  *automations.Service
	RequestLogs  *requestlog.Service
	Delivery     *delivery.Service // an email's attempts
	Capture      *capture.Service  // captured mail (MAILROOM_OUTBOUND=capture); nil when mail is sent
}

// Scope decisions where the spec says "not shown" are in docs/decisions.md:
// mail:send covers the emails routes (a send-only key reads the status of
// what it sent), mail:read the received-mail routes, workspace everything else.
// A key bound to a mailbox may use only the routes marked for it (send, read,
// box, sendRead), each narrowed to its mailbox; the rest answer 403.
var (
	public   = workspaces.Grant{}                                                                            // no key needed
	send     = workspaces.Grant{Scopes: []string{workspaces.ScopeSend}, Mailbox: true}                       // mail:send
	read     = workspaces.Grant{Scopes: []string{workspaces.ScopeRead}, Mailbox: true}                       // mail:read
	sendRead = workspaces.Grant{Scopes: []string{workspaces.ScopeSend, workspaces.ScopeRead}, Mailbox: true} // sends received mail on
	ws       = workspaces.Grant{Scopes: []string{workspaces.ScopeWorkspace}}                                 // workspace-wide
	box      = workspaces.Grant{Scopes: []string{workspaces.ScopeWorkspace}, Mailbox: true}                  // workspace, a bound key sees its mailbox's
)

// rootRoutes lists what the node serves outside /v1: probes, metrics and
// the hosted pages a browser opens (a GET only shows a page, because mail
// scanners fetch links; the POST its form makes acts).
func (h *handler) rootRoutes(mux *http.ServeMux, v1 http.Handler) {
	mux.Handle("/v1/", v1) // every route below in routes
	mux.HandleFunc("GET /healthz", h.healthz)
	mux.HandleFunc("GET /readyz", h.readyz)
	if !h.d.MetricsElsewhere {
		mux.Handle("GET /metrics", MetricsHandler(h.d.Registry, h.d.Metrics))
	}
	// The hosted pages a recipient opens from an email, each under hostedPage's headers.
	page := func(pattern string, fn http.HandlerFunc) { mux.Handle(pattern, hostedPage(fn)) }
	page("GET /confirm/{token}", h.pageLimit(h.confirmPage)) // double opt-in
	page("POST /confirm/{token}", h.pageLimit(h.confirmSubmit))
	page("GET /preferences/{token}", h.pageLimit(h.preferencePage)) // topics: switch each, or all off
	page("POST /preferences/{token}", h.pageLimit(h.preferenceSubmit))
	page("GET /unsubscribe/{token}", h.pageLimit(h.unsubscribePage)) // RFC 8058: a GET only shows a button
	page("POST /unsubscribe/{token}", h.unsubscribeOneClick)
	page("GET /t/c/{token}", h.trackClick) // tracked link: 302 to the signed URL only
	page("GET /t/o/{token}", h.trackOpen)  // open pixel (1×1 GIF)
	if h.d.Pages != nil {
		h.d.Pages.Register(mux) // the dashboard: GET /{$}, /sign-in, /emails, ... (internal/dashboard/routes.go)
	}
	mux.HandleFunc("/", h.noRoute)
}

// routes lists every /v1 route on one screen: pattern, scope, the error
// shape its family answers (spec "Errors / Body shapes"), handler.
func (h *handler) routes(t *routeTable) {
	t.handle("GET /v1/openapi.json", public, nested, h.openapi)

	t.handle("GET /v1/api-keys", box, nested, h.listAPIKeys)
	t.handle("POST /v1/api-keys", box, nested, h.createAPIKey)
	t.handle("DELETE /v1/api-keys/{id}", box, nested, h.deleteAPIKey)

	// A key with only mail:send sees only the emails it sent.
	t.handle("POST /v1/emails", send, nested, h.createEmail)
	t.handle("POST /v1/emails/batch", send, nested, h.createEmailBatch)
	t.handle("GET /v1/emails", send, nested, h.listEmails)
	t.handle("GET /v1/emails/metrics", ws, nested, h.getEmailMetrics) // the Resend SDKs' emails.metrics, over the analytics rollups
	t.handle("GET /v1/emails/{id}", send, nested, h.getEmail)
	t.handle("PATCH /v1/emails/{id}", send, nested, h.rescheduleEmail)
	t.handle("POST /v1/emails/{id}/cancel", send, nested, h.cancelEmail)
	t.handle("DELETE /v1/messages/scheduled/{id}", send, nested, h.cancelScheduled) // older spelling of cancel
	// The Resend SDKs' receiving: the received messages of /v1/messages in their shapes.
	t.handle("GET /v1/emails/receiving", read, nested, h.listReceived)
	t.handle("GET /v1/emails/receiving/{id}", read, nested, h.getReceived) // marks it read
	t.handle("GET /v1/emails/receiving/{id}/attachments", read, nested, h.listReceivedAttachments)
	t.handle("GET /v1/emails/receiving/{id}/attachments/{attachment}", read, nested, h.getReceivedAttachment)
	// The Resend SDKs' emails.attachments: a sent email's attachments, from its stored body.
	// GET /v1/emails/{id}/attachments… and /attempts are served here (server.go sentEmailParts).
	t.handle("GET /v1/emails/sent/{id}/attempts", send, nested, h.getEmailAttempts) // its story: each SMTP attempt, each webhook delivery
	// Captured mail (MAILROOM_OUTBOUND=capture, mailroom dev): 404 on a node that sends.
	t.handle("GET /v1/captured-emails", ws, nested, h.listCapturedEmails)
	t.handle("GET /v1/captured-emails/{id}", ws, nested, h.getCapturedEmail)
	t.handle("GET /v1/captured-emails/{id}/raw", ws, nested, h.getCapturedRaw) // message/rfc822, the exact bytes
	t.handle("GET /v1/emails/sent/{id}/attachments", send, nested, h.listSentAttachments)
	t.handle("GET /v1/emails/sent/{id}/attachments/{attachment}", send, nested, h.getSentAttachment)
	t.handle("GET /v1/emails/sent/{id}/attachments/{attachment}/content", send, nested, h.downloadSentAttachment) // download_url
	t.handle("GET /v1/emails/receiving/{id}/raw", public, nested, h.getReceivedRaw)                               // ?token= from the read's raw.download_url

	t.handle("GET /v1/domains", ws, nested, h.listDomains)
	t.handle("POST /v1/domains", ws, nested, h.createDomain)
	t.handle("DELETE /v1/domains", ws, nested, h.deleteDomainByQuery) // deprecated ?id=
	t.handle("GET /v1/domains/{id}", ws, nested, h.getDomain)
	t.handle("PATCH /v1/domains/{id}", ws, nested, h.patchDomain)
	t.handle("DELETE /v1/domains/{id}", ws, nested, h.deleteDomain)
	t.handle("POST /v1/domains/{id}/verify", ws, nested, h.verifyDomain)
	t.handle("GET /v1/domains/{id}/tracking", ws, nested, h.getTracking)
	t.handle("PATCH /v1/domains/{id}/tracking", ws, nested, h.patchTracking)

	t.handle("GET /v1/webhooks", box, nested, h.listWebhooks)
	t.handle("POST /v1/webhooks", box, nested, h.createWebhook)
	t.handle("PATCH /v1/webhooks", box, nested, h.updateWebhook)  // deprecated ?id=
	t.handle("DELETE /v1/webhooks", box, nested, h.deleteWebhook) // deprecated ?id=
	t.handle("GET /v1/webhooks/deliveries", box, nested, h.listWebhookDeliveries)
	t.handle("POST /v1/webhooks/deliveries", box, nested, h.sendWebhookDelivery)
	t.handle("GET /v1/webhooks/{id}", box, nested, h.getWebhook)
	t.handle("PATCH /v1/webhooks/{id}", box, nested, h.updateWebhook)
	t.handle("DELETE /v1/webhooks/{id}", box, nested, h.deleteWebhook)
	t.handle("POST /v1/webhooks/{id}/signing-secret/rotate", box, nested, h.rotateWebhookSecret) // Resend's rotate_secret
	t.handle("GET /v1/webhooks/{id}/events", box, nested, h.listWebhookEvents)                   // the delivery log by event, for the Resend SDKs
	t.handle("GET /v1/webhooks/{id}/events/{event}", box, nested, h.getWebhookEvent)             // with its body as delivered
	t.handle("GET /v1/webhooks/{id}/events/{event}/attempts", box, nested, h.listWebhookEventAttempts)
	t.handle("POST /v1/webhooks/{id}/events/{event}/replay", box, nested, h.replayWebhookEvent)
	t.handle("POST /v1/webhooks/{id}/replay", box, nested, h.replayWebhookRange) // { since, until, types, email_id }: queued again, at most 1000

	t.handle("GET /v1/suppressions", ws, flat, h.listSuppressions)
	t.handle("POST /v1/suppressions", ws, flat, h.createSuppression)
	t.handle("GET /v1/suppressions/{id}", ws, flat, h.getSuppression)       // or an address, as the Resend SDKs pass
	t.handle("DELETE /v1/suppressions/{id}", ws, flat, h.deleteSuppression) // or an address
	t.handle("POST /v1/suppressions/batch/add", ws, flat, h.addSuppressionBatch)
	t.handle("POST /v1/suppressions/batch/remove", ws, flat, h.removeSuppressionBatch)
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
	t.handle("POST /v1/templates/{id}/duplicate", ws, flat, h.duplicateTemplate) // a draft "<name> (copy)"

	t.handle("GET /v1/topics", ws, flat, h.listTopics) // ?include_archived=true
	t.handle("POST /v1/topics", ws, flat, h.createTopic)
	t.handle("GET /v1/topics/preferences", ws, flat, h.getTopicPreferences) // ?email=
	t.handle("POST /v1/topics/preferences", ws, flat, h.postTopicPreferences)
	t.handle("GET /v1/topics/{id}", ws, flat, h.getTopic)
	t.handle("PATCH /v1/topics/{id}", ws, flat, h.patchTopic)
	t.handle("DELETE /v1/topics/{id}", ws, flat, h.archiveTopic) // archives

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

	t.handle("GET /v1/analytics", ws, nested, h.getAnalytics)
	t.handle("GET /v1/analytics/tags", ws, nested, h.getAnalyticsTags)

	t.handle("GET /v1/contacts", ws, flat, h.listContacts)
	t.handle("POST /v1/contacts", ws, flat, h.createContact)
	t.handle("GET /v1/contacts/duplicates", ws, flat, h.listDuplicates)
	// The Resend SDKs' contacts.imports: a CSV form through the audience import, kept with an id.
	t.handle("POST /v1/contacts/imports", ws, flat, h.createContactImport) // multipart: file, column_map, segments, audience_id
	t.handle("GET /v1/contacts/imports", ws, flat, h.listContactImports)
	t.handle("GET /v1/contact-imports/{id}", ws, flat, h.getContactImport) // and GET /v1/contacts/imports/{id} (server.go sdkContactImport)
	t.handle("POST /v1/contacts/duplicates", ws, flat, h.mergeDuplicates)  // { survivor_id, loser_id }
	// {id} is a contact's id or, as the Resend SDKs pass it, its address.
	t.handle("GET /v1/contacts/{id}", ws, flat, h.byContactRef(h.getContact))
	t.handle("PATCH /v1/contacts/{id}", ws, flat, h.byContactRef(h.patchContact))
	t.handle("DELETE /v1/contacts/{id}", ws, flat, h.byContactRef(h.deleteContact))
	t.handle("GET /v1/contacts/{id}/tags", ws, nested, h.byContactRef(h.getContactTags))
	t.handle("POST /v1/contacts/{id}/tags", ws, nested, h.byContactRef(h.addContactTags))
	t.handle("DELETE /v1/contacts/{id}/tags", ws, nested, h.byContactRef(h.removeContactTag)) // ?tag=
	t.handle("GET /v1/contacts/{id}/attributes", ws, nested, h.byContactRef(h.getContactAttributes))
	t.handle("PATCH /v1/contacts/{id}/attributes", ws, nested, h.byContactRef(h.patchContactAttributes))
	t.handle("GET /v1/contacts/{id}/subscriptions", ws, nested, h.byContactRef(h.getContactSubscriptions))
	t.handle("GET /v1/contacts/{id}/topics", ws, nested, h.byContactRef(h.getContactTopics)) // the Resend SDKs' shape of the preferences
	t.handle("PATCH /v1/contacts/{id}/topics", ws, nested, h.byContactRef(h.patchContactTopics))
	t.handle("GET /v1/contacts/{id}/segments", ws, nested, h.byContactRef(h.listContactSegments)) // the segments whose rules it meets
	// Declared contact attributes with a type and a fallback (the Resend SDKs' contactProperties).
	t.handle("GET /v1/contact-properties", ws, nested, h.listContactProperties)
	t.handle("POST /v1/contact-properties", ws, nested, h.createContactProperty)
	t.handle("GET /v1/contact-properties/{id}", ws, nested, h.getContactProperty)
	t.handle("PATCH /v1/contact-properties/{id}", ws, nested, h.patchContactProperty)
	t.handle("DELETE /v1/contact-properties/{id}", ws, nested, h.deleteContactProperty) // contacts keep their values

	t.handle("GET /v1/ips", ws, nested, h.listIPs)
	t.handle("POST /v1/ips", ws, nested, h.takeIP) // { ip? } from the MAILROOM_IPS inventory
	t.handle("GET /v1/ips/{id}", ws, nested, h.getIP)
	t.handle("PATCH /v1/ips/{id}", ws, nested, h.patchIP) // { paused?, daily_cap? } and nothing else
	t.handle("DELETE /v1/ips/{id}", ws, nested, h.deleteIP)
	t.handle("GET /v1/segments", ws, nested, h.listSegments)
	t.handle("POST /v1/segments", ws, nested, h.createSegment)
	t.handle("GET /v1/segments/{id}", ws, nested, h.getSegment) // ?count=live recounts
	t.handle("PATCH /v1/segments/{id}", ws, nested, h.patchSegment)
	t.handle("DELETE /v1/segments/{id}", ws, nested, h.deleteSegment) // contacts untouched
	t.handle("GET /v1/segments/{id}/members", ws, nested, h.listSegmentMembers)
	t.handle("GET /v1/segments/{id}/contacts", ws, nested, h.listSegmentMembers) // the Resend SDKs' contacts.list{segmentId}

	t.handle("GET /v1/broadcasts", ws, nested, h.listBroadcasts)
	t.handle("POST /v1/broadcasts", ws, nested, h.createBroadcast)
	t.handle("POST /v1/broadcasts/preview", ws, nested, h.previewDraftBroadcast) // writes nothing
	t.handle("GET /v1/broadcasts/{id}", ws, nested, h.getBroadcast)
	t.handle("PATCH /v1/broadcasts/{id}", ws, nested, h.patchBroadcast) // drafts only
	t.handle("DELETE /v1/broadcasts/{id}", ws, nested, h.cancelBroadcast)
	t.handle("POST /v1/broadcasts/{id}/cancel", ws, nested, h.cancelBroadcast)
	t.handle("POST /v1/broadcasts/{id}/send", ws, nested, h.sendBroadcast)
	t.handle("POST /v1/broadcasts/{id}/test", ws, nested, h.testBroadcast)
	t.handle("GET /v1/broadcasts/{id}/preview", ws, nested, h.previewBroadcast)
	t.handle("POST /v1/broadcasts/{id}/preflight", ws, nested, h.preflightBroadcast) // problems and content checks; writes nothing
	t.handle("GET /v1/broadcasts/{id}/recipients", ws, nested, h.listBroadcastRecipients)
	t.handle("POST /v1/broadcasts/{id}/duplicate", ws, nested, h.duplicateBroadcast)           // a draft "<name> (copy)"
	t.handle("GET /v1/broadcasts/{id}/clicked-links", ws, nested, h.listBroadcastClickedLinks) // the Resend SDKs' clickedLinks: people's clicks per URL
	// A key bound to a mailbox sees only that mailbox (CONTRACT-WAVE2).
	t.handle("GET /v1/mailboxes", box, nested, h.listMailboxes)
	t.handle("POST /v1/mailboxes", box, nested, h.createMailbox)
	t.handle("GET /v1/mailboxes/{id}", box, nested, h.getMailbox)
	t.handle("DELETE /v1/mailboxes/{id}", box, nested, h.deleteMailbox)
	t.handle("GET /v1/messages", read, nested, h.listMessages)
	t.handle("POST /v1/messages", send, nested, h.composeMessage)                    // sends as a mailbox, through the sending service
	t.handle("GET /v1/messages/scheduled", send, nested, h.listScheduledMessages)    // receive-side bookings still waiting, soonest first
	t.handle("GET /v1/messages/scheduled/{id}", send, nested, h.getScheduledMessage) // the booking's outcome, whenever asked
	t.handle("GET /v1/messages/{id}", read, nested, h.getMessage)                    // marks it read
	t.handle("POST /v1/messages/{id}/archive", read, nested, h.archiveMessage)
	t.handle("POST /v1/messages/{id}/reply-all", sendRead, nested, h.replyAll)
	t.handle("POST /v1/messages/{id}/forward", sendRead, nested, h.forwardMessage)
	t.handle("GET /v1/messages/{id}/attachments/{filename}", read, nested, h.getAttachment)
	t.handle("GET /v1/threads", read, nested, h.listThreads)
	t.handle("GET /v1/threads/{id}", read, nested, h.getThread)
	t.handle("GET /v1/search", read, nested, h.search)
	// The Resend SDKs' inboxes (by id or address): mailboxes, their threads and messages.
	t.handle("POST /v1/inboxes", box, nested, h.createInbox)
	t.handle("GET /v1/inboxes", box, nested, h.listInboxes)
	t.handle("GET /v1/inboxes/{inbox}", box, nested, h.getInbox)
	t.handle("PATCH /v1/inboxes/{inbox}", box, nested, h.updateInbox) // renames the mailbox
	t.handle("DELETE /v1/inboxes/{inbox}", box, nested, h.deleteInbox)
	t.handle("GET /v1/inboxes/{inbox}/threads", read, nested, h.listInboxThreads)
	t.handle("GET /v1/inboxes/{inbox}/threads/search", read, nested, h.searchInboxThreads) // over GET /v1/search
	t.handle("GET /v1/inboxes/{inbox}/threads/{thread}", read, nested, h.getInboxThread)
	t.handle("PATCH /v1/inboxes/{inbox}/threads/{thread}", read, nested, h.updateInboxThread) // read, archive: every message's flags
	t.handle("DELETE /v1/inboxes/{inbox}/threads/{thread}", read, nested, h.deleteInboxThread)
	t.handle("GET /v1/inboxes/{inbox}/threads/{thread}/emails", read, nested, h.listInboxThreadEmails)
	t.handle("GET /v1/inboxes/{inbox}/threads/{thread}/emails/{email}", read, nested, h.getInboxThreadEmail) // marks it read
	t.handle("POST /v1/inboxes/{inbox}/threads/{thread}/emails/{email}/reply", sendRead, nested, h.replyInboxThreadEmail)
	t.handle("POST /v1/inboxes/{inbox}/threads/{thread}/emails/{email}/forward", sendRead, nested, h.forwardInboxThreadEmail)
	t.handle("GET /v1/identity", read, nested, h.getIdentity)
	t.handle("PUT /v1/identity/rules", read, nested, h.setIdentityRules)
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
	t.handle("POST /v1/automations/{id}/trigger", ws, nested, h.triggerAutomation)         // api.call automations only
	t.handle("POST /v1/automations/{id}/duplicate", ws, nested, h.duplicateAutomation)     // disabled, "<name> (copy)"
	t.handle("POST /v1/automations/{id}/stop", ws, nested, h.stopAutomation)               // the Resend SDKs' stop: disables it
	t.handle("GET /v1/automations/{id}/runs", ws, nested, h.listAutomationRuns)
	t.handle("GET /v1/automations/{id}/runs/{runId}", ws, nested, h.getAutomationRun)
	t.handle("DELETE /v1/automations/{id}/runs/{runId}", ws, nested, h.cancelAutomationRun) // a waiting run
	// Custom events (the Resend SDKs' events.*): an automation with trigger event: <name> starts on a send.
	t.handle("POST /v1/events", ws, nested, h.createEvent)
	t.handle("GET /v1/events", ws, nested, h.listEvents)
	t.handle("GET /v1/events/stream", box, nested, h.streamEvents) // the webhook events as SSE; Last-Event-ID or ?since= resumes
	t.handle("GET /v1/events/{id}", ws, nested, h.getEvent)        // id or name
	t.handle("PATCH /v1/events/{id}", ws, nested, h.updateEvent)
	t.handle("DELETE /v1/events/{id}", ws, nested, h.deleteEvent)
	t.handle("POST /v1/events/send", ws, nested, h.sendEvent) // starts the automations listening, for a contact

	// The request log of the workspace's calls (the Resend SDKs' logs.*);
	// workspace scope: it shows every key's calls.
	t.handle("GET /v1/logs", ws, nested, h.listRequestLogs) // ?status=4xx&method=&path=&since=&until=
	t.handle("GET /v1/logs/{id}", ws, nested, h.getRequestLog)

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
	t.unknown("/v1/contacts/{id}/topics", nested)
	t.unknown("/v1/contacts/{id}/segments", nested)
}

func errNoRoute() error {
	return apierr.New(http.StatusNotFound, "not_found", "No such route.").WithNext("See /v1/openapi.json for the routes this server offers.")
}
