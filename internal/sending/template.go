package sending

import (
	"bytes"
	"context"
	"encoding/json"

	"mailroom/internal/apierr"
	"mailroom/internal/render"
)

// withTemplate renders the published version of the send's template into
// v: the template's subject, html and text, except those the send gives
// itself (a non-empty html or text, any subject). It runs after the
// idempotency fingerprint, which covers the template id and variables as
// sent, so a replay is answered without rendering. v.TemplateID becomes
// the template's id (the send may name it by slug).
func (s *Service) withTemplate(ctx context.Context, workspaceID string, r *Request, v *Validated) error {
	if s.templates == nil {
		return apierr.BadRequest("invalid_template", "template %q does not exist on this workspace.", clip(v.TemplateID))
	}
	var vars map[string]any
	if v.TemplateVariables != nil {
		dec := json.NewDecoder(bytes.NewReader(v.TemplateVariables))
		dec.UseNumber() // 10 stays "10", never "1e+01"
		if err := dec.Decode(&vars); err != nil {
			return apierr.BadRequest("invalid_template", "template has variables that cannot be read.")
		}
	}
	if v.Topic != "" {
		// Personal links are filled per recipient at delivery.
		if vars == nil {
			vars = map[string]any{}
		}
		vars[render.UnsubscribeURL], vars[render.PreferencesURL] = UnsubscribeURLMark, PreferencesURLMark
	}
	out, err := s.templates.ForSend(ctx, workspaceID, v.TemplateID, vars)
	if err != nil {
		return err
	}
	if r.Subject == nil {
		v.Subject = out.Subject
	}
	// A send's own html replaces the template's html and, unless the send
	// gives text too, its text (which describes the template's html).
	if v.HTML == "" {
		v.HTML = out.HTML
		if v.Text == "" {
			v.Text = out.Text
		}
	}
	v.TemplateID, v.TemplateVersion = out.TemplateID, out.Version
	return nil
}
