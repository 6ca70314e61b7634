package dashboard

import (
	"net/http"

	"mailroom/internal/workspaces"
)

// Grants a page needs: the same as its /v1 route's (httpapi/routes.go). A
// session whose key is bound to a mailbox sees only the pages marked for it,
// each narrowed to its mailbox.
var (
	anyKey   = workspaces.Grant{Mailbox: true}
	send     = workspaces.Grant{Scopes: []string{workspaces.ScopeSend}, Mailbox: true}
	read     = workspaces.Grant{Scopes: []string{workspaces.ScopeRead}, Mailbox: true}
	sendRead = workspaces.Grant{Scopes: []string{workspaces.ScopeSend, workspaces.ScopeRead}, Mailbox: true}
	ws       = workspaces.Grant{Scopes: []string{workspaces.ScopeWorkspace}}
	box      = workspaces.Grant{Scopes: []string{workspaces.ScopeWorkspace}, Mailbox: true}
)

// routes lists every dashboard route on one screen. A GET only shows; every
// change is a POST with the session's CSRF token. None of these patterns
// overlaps the API's (/v1/, /t/, /confirm/, /preferences/, /unsubscribe/,
// /healthz, /readyz, /metrics).
func (x *Dashboard) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /assets/{file}", x.asset)
	mux.HandleFunc("GET /sign-in", x.signInPage)
	mux.HandleFunc("POST /sign-in", x.signIn)
	mux.HandleFunc("GET /sign-in/link/{token}", x.linkPage) // shows a button only
	mux.HandleFunc("POST /sign-in/link/{token}", x.redeemLink)
	mux.Handle("POST /sign-out", x.page(anyKey, x.signOut))

	mux.Handle("GET /{$}", x.page(anyKey, x.overview))
	mux.Handle("GET /emails", x.page(send, x.emails)) // a send-only key sees the emails it sent
	mux.Handle("GET /emails/{id}", x.page(send, x.email))
	mux.Handle("GET /emails/{id}/body", x.page(send, x.emailBody))                  // the sandboxed iframe's document
	mux.Handle("GET /emails/{id}/attachments/{n}", x.page(send, x.emailAttachment)) // always a download
	mux.Handle("GET /captured", x.page(ws, x.capturedList))                         // mailroom dev: what would have been sent
	mux.Handle("GET /captured/{id}", x.page(ws, x.capturedMessage))                 // ?view=html, text, headers or raw
	mux.Handle("GET /captured/{id}/body", x.page(ws, x.capturedBody))
	mux.Handle("GET /domains", x.page(ws, x.domains))
	mux.Handle("POST /domains", x.page(ws, x.addDomain))
	mux.Handle("GET /domains/{id}", x.page(ws, x.domain))
	mux.Handle("POST /domains/{id}/verify", x.page(ws, x.verifyDomain))
	mux.Handle("GET /domains/{id}/delete", x.page(ws, x.confirmDeleteDomain)) // asks; the POST removes
	mux.Handle("POST /domains/{id}/delete", x.page(ws, x.deleteDomain))
	mux.Handle("GET /webhooks", x.page(box, x.webhooks))
	mux.Handle("POST /webhooks", x.page(box, x.addWebhook))
	mux.Handle("GET /webhooks/{id}", x.page(box, x.webhook))
	mux.Handle("POST /webhooks/{id}/test", x.page(box, x.testWebhook))
	mux.Handle("POST /webhooks/{id}/rotate", x.page(box, x.rotateWebhook))
	mux.Handle("POST /webhooks/{id}/active", x.page(box, x.setWebhookActive))
	mux.Handle("GET /webhooks/{id}/delete", x.page(box, x.confirmDeleteWebhook)) // asks; the POST deletes
	mux.Handle("POST /webhooks/{id}/delete", x.page(box, x.deleteWebhook))
	mux.Handle("POST /webhooks/{id}/replay/{delivery}", x.page(box, x.replayDelivery))
	mux.Handle("GET /api-keys", x.page(box, x.apiKeys))
	mux.Handle("POST /api-keys", x.page(box, x.createKey))                   // shows the key once, in the answer
	mux.Handle("GET /api-keys/{id}/revoke", x.page(box, x.confirmRevokeKey)) // asks; the POST revokes
	mux.Handle("POST /api-keys/{id}/revoke", x.page(box, x.revokeKey))
	mux.Handle("GET /suppressions", x.page(ws, x.suppressions))
	mux.Handle("POST /suppressions", x.page(ws, x.addSuppression))
	mux.Handle("GET /suppressions/{id}/remove", x.page(ws, x.confirmRemoveSuppression)) // asks; the POST removes
	mux.Handle("POST /suppressions/{id}/remove", x.page(ws, x.removeSuppression))
	mux.Handle("GET /mailboxes", x.page(box, x.mailboxes)) // a bound key sees its own
	mux.Handle("POST /mailboxes", x.page(box, x.createMailbox))
	mux.Handle("GET /mailboxes/{id}/delete", x.page(box, x.confirmDeleteMailbox)) // asks; the POST deletes
	mux.Handle("POST /mailboxes/{id}/delete", x.page(box, x.deleteMailbox))
	mux.Handle("GET /topics", x.page(ws, x.topics))
	mux.Handle("POST /topics", x.page(ws, x.createTopic))
	mux.Handle("GET /topics/{id}", x.page(ws, x.topic))
	mux.Handle("POST /topics/{id}", x.page(ws, x.saveTopic))                  // PATCH: everything but the key
	mux.Handle("GET /topics/{id}/archive", x.page(ws, x.confirmArchiveTopic)) // asks; the POST archives (as DELETE /v1/topics/{id})
	mux.Handle("POST /topics/{id}/archive", x.page(ws, x.archiveTopic))
	mux.Handle("POST /topics/{id}/restore", x.page(ws, x.restoreTopic))
	mux.Handle("GET /contacts", x.page(ws, x.contacts))     // ?q= searches, as GET /v1/contacts
	mux.Handle("GET /contacts/{id}", x.page(ws, x.contact)) // GET /v1/contacts/{id} with its subscriptions
	mux.Handle("GET /segments", x.page(ws, x.segments))
	mux.Handle("POST /segments", x.page(ws, x.createSegment))
	mux.Handle("GET /segments/{id}/delete", x.page(ws, x.confirmDeleteSegment)) // asks; the POST deletes
	mux.Handle("POST /segments/{id}/delete", x.page(ws, x.deleteSegment))

	// The later areas: the inbox (read, attachments, reply), audiences (CSV
	// import), templates (edit, live preview), broadcasts (compose to
	// stats), automations (YAML edit).
	mux.Handle("GET /inbox", x.page(read, x.inbox)) // a key bound to a mailbox sees only it
	mux.Handle("GET /inbox/{thread}", x.page(read, x.thread))
	mux.Handle("GET /inbox/{thread}/{message}/body", x.page(read, x.messageBody))
	mux.Handle("GET /inbox/{thread}/{message}/attachments/{filename}", x.page(read, x.attachment)) // always a download
	mux.Handle("POST /inbox/{thread}/{message}/reply", x.page(sendRead, x.reply))                  // as POST /v1/messages/{id}/reply-all
	mux.Handle("GET /audiences", x.page(ws, x.audiences))
	mux.Handle("POST /audiences", x.page(ws, x.createAudience)) // as POST /v1/audiences
	mux.Handle("GET /audiences/{id}", x.page(ws, x.audience))
	mux.Handle("GET /audiences/{id}/delete", x.page(ws, x.confirmDeleteAudience)) // asks; the POST deletes
	mux.Handle("POST /audiences/{id}/delete", x.page(ws, x.deleteAudience))
	mux.Handle("POST /audiences/{id}/members", x.page(ws, x.addMember))                          // one row, as POST /v1/audiences/{id}/contacts
	mux.Handle("GET /audiences/{id}/members/{member}/remove", x.page(ws, x.confirmRemoveMember)) // asks; the POST removes
	mux.Handle("POST /audiences/{id}/members/{member}/remove", x.page(ws, x.removeMember))
	mux.Handle("POST /audiences/{id}/import", x.page(ws, x.importContacts))      // a CSV file, kept for the mapping page
	mux.Handle("GET /audiences/{id}/uploads/{upload}", x.page(ws, x.uploadPage)) // its columns, their proposed roles, its first rows
	mux.Handle("POST /audiences/{id}/uploads/{upload}/check", x.page(ws, x.checkUpload))
	mux.Handle("POST /audiences/{id}/uploads/{upload}/import", x.page(ws, x.runUpload)) // committed with its import job
	mux.Handle("GET /audiences/{id}/imports/{import}", x.page(ws, x.importPage))        // running (reloads itself), then the report
	mux.Handle("GET /templates", x.page(ws, x.templates))
	mux.Handle("GET /templates/new", x.page(ws, x.newTemplate))
	mux.Handle("POST /templates", x.page(ws, x.createTemplate))       // as POST /v1/templates
	mux.Handle("POST /templates/preview", x.page(ws, x.draftPreview)) // the editor as typed, into the preview's frame; saves nothing
	mux.Handle("GET /templates/{id}", x.page(ws, x.template))
	mux.Handle("POST /templates/{id}", x.page(ws, x.saveTemplate)) // PATCH, a new version, publish: as on /v1
	mux.Handle("POST /templates/{id}/publish", x.page(ws, x.publishTemplate))
	mux.Handle("GET /templates/{id}/delete", x.page(ws, x.confirmDeleteTemplate)) // asks; the POST deletes
	mux.Handle("POST /templates/{id}/delete", x.page(ws, x.deleteTemplate))
	mux.Handle("GET /templates/{id}/preview", x.page(ws, x.templatePreview))
	mux.Handle("GET /broadcasts", x.page(ws, x.broadcasts))
	mux.Handle("GET /broadcasts/new", x.page(ws, x.newBroadcast))
	mux.Handle("POST /broadcasts", x.page(ws, x.createBroadcast))    // a draft, as POST /v1/broadcasts
	mux.Handle("GET /broadcasts/{id}", x.page(ws, x.broadcast))      // ?member= previews for one member; ?status= filters recipients
	mux.Handle("POST /broadcasts/{id}", x.page(ws, x.saveBroadcast)) // a draft's edit, as PATCH /v1/broadcasts/{id}
	mux.Handle("GET /broadcasts/{id}/body", x.page(ws, x.broadcastBody))
	mux.Handle("GET /broadcasts/{id}/preview", x.page(ws, x.broadcastPreview))      // ?email=, as GET /v1/broadcasts/{id}/preview
	mux.Handle("POST /broadcasts/{id}/test", x.page(ws, x.testBroadcast))           // as POST /v1/broadcasts/{id}/test
	mux.Handle("POST /broadcasts/{id}/send", x.page(ws, x.sendBroadcast))           // now, or at scheduled_at
	mux.Handle("GET /broadcasts/{id}/cancel", x.page(ws, x.confirmCancelBroadcast)) // asks; the POST cancels
	mux.Handle("POST /broadcasts/{id}/cancel", x.page(ws, x.cancelBroadcast))
	mux.Handle("POST /broadcasts/{id}/duplicate", x.page(ws, x.duplicateBroadcast)) // a new draft, as POST /v1/broadcasts
	mux.Handle("GET /automations", x.page(ws, x.automations))
	mux.Handle("GET /automations/{id}", x.page(ws, x.automation))
	mux.Handle("POST /automations/{id}", x.page(ws, x.saveAutomation)) // a new version of the YAML
	mux.Handle("POST /automations/{id}/enabled", x.page(ws, x.setAutomationEnabled))
	mux.Handle("GET /automations/{id}/delete", x.page(ws, x.confirmDeleteAutomation)) // asks; the POST deletes
	mux.Handle("POST /automations/{id}/delete", x.page(ws, x.deleteAutomation))
	mux.Handle("GET /logs", x.page(ws, x.requestLogs)) // the request log, as GET /v1/logs
	mux.Handle("GET /logs/{id}", x.page(ws, x.requestLog))
}
