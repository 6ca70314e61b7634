package app

import (
	"mailroom/internal/bodylimit"
	"mailroom/internal/config"
)

// uploadRoutes take large bodies and get MAILROOM_HTTP_UPLOAD_TIMEOUT:
// sends (40 MB of attachments, batches more), contact imports (8 MB),
// automation YAML, and the dashboard's CSV import and automation editor.
var uploadRoutes = []string{
	"POST /v1/emails",
	"POST /v1/emails/batch",
	"POST /v1/audiences/{id}/contacts",
	"POST /v1/automations",
	"PUT /v1/automations/{id}",
	"POST /audiences/{id}/import",
	"POST /automations/{id}",
}

// newBodyGuard bounds request bodies on every HTTP listener (API and
// dashboard share its counts): a client trickling a body is cut at the
// timeout, and slow bodies cannot take every connection.
func newBodyGuard(cfg *config.Config) *bodylimit.Guard {
	l := cfg.Limits
	return bodylimit.New(bodylimit.Options{Timeout: l.HTTPBodyTimeout, UploadTimeout: l.HTTPUploadTimeout, Uploads: uploadRoutes,
		Max: l.HTTPMaxBodies, PerIP: l.HTTPMaxBodiesPerIP})
}
