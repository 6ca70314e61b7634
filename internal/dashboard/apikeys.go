package dashboard

import (
	"net/http"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/workspaces"
)

type apiKeysView struct {
	Keys     []workspaces.Key
	Sessions []workspaces.Key // sign-in link sessions' keys, shown apart
	Current  string           // the session's key id
	Scopes   []string         // the scopes a new key may carry: the session key's own
	Created  string           // the new key's value, shown once (keycreated)
	NewKey   *workspaces.Key
}

func (x *Dashboard) apiKeys(w http.ResponseWriter, r *http.Request, s *session) error {
	keys, err := x.d.Workspaces.ListKeys(r.Context(), s.key.WorkspaceID, s.key.MailboxID)
	if err != nil {
		return err
	}
	sessions, err := x.d.Workspaces.SessionKeys(r.Context(), s.key.WorkspaceID, s.key.MailboxID)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "apikeys", apiKeysView{Keys: keys, Sessions: sessions, Current: s.key.ID, Scopes: s.key.Scopes})
	return nil
}

// createKey makes a key and shows its value in this answer only (no-store,
// never in a URL); a key bound to a mailbox makes keys bound like it, as
// POST /v1/api-keys does.
func (x *Dashboard) createKey(w http.ResponseWriter, r *http.Request, s *session) error {
	scopes := r.PostForm["scope"]
	if len(scopes) == 0 {
		return apierr.InvalidRequest("Choose at least one scope.")
	}
	k, secret, err := x.d.Workspaces.CreateKey(r.Context(), s.key, s.key.WorkspaceID, strings.TrimSpace(r.PostForm.Get("name")), scopes, true, workspaces.KeyMailbox{ID: s.key.MailboxID, Address: s.key.MailboxAddress})
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusCreated, "keycreated", apiKeysView{Created: secret, NewKey: k})
	return nil
}

// revokeKey revokes a key; revoking the session's own key ends the session
// (the next request finds the key gone), so it goes to the sign-in page.
func (x *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	if err := x.d.Workspaces.DeleteKey(r.Context(), s.key.WorkspaceID, s.key.MailboxID, id); err != nil {
		return err
	}
	if id == s.key.ID {
		if err := deleteSession(r.Context(), x.d.DB, s.row.hash); err != nil {
			return err
		}
		x.clearCookie(w, sessionCookie)
		return redirect(w, r, "/sign-in")
	}
	return redirect(w, r, "/api-keys?ok=revoked")
}
