package dashboard

import (
	"context"
	"crypto/subtle"
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/ids"
	"mailroom/internal/workspaces"
)

// Cookie names. The session cookie holds a random token whose hash is the
// session's row id; the sign-in cookie is the form token of the sign-in
// pages (double submit), before any session exists.
const (
	sessionCookie = "mailroom_session"
	signInCookie  = "mailroom_signin"
)

// session is the signed-in person's: the key it acts with, authenticated
// again for this request.
type session struct {
	row *sessionRow
	key *workspaces.Key
}

// CreateLink makes a one-time sign-in link for workspaceID, valid for
// LinkTTL, and returns its URL under publicURL (`mailroom dashboard link`).
func CreateLink(ctx context.Context, d Deps, workspaceID string) (string, time.Time, error) {
	if _, err := d.Workspaces.Workspace(ctx, workspaceID); err != nil {
		return "", time.Time{}, err
	}
	token := ids.Secret(32)
	now := d.Clock.Now()
	exp := now.Add(LinkTTL)
	if err := insertLink(ctx, d.DB, hashToken(token), workspaceID, now, exp); err != nil {
		return "", time.Time{}, err
	}
	return strings.TrimRight(d.PublicURL, "/") + "/sign-in/link/" + url.PathEscape(token), exp, nil
}

// current reads the request's session: nil when there is none, it expired,
// the cookie was altered, or its key has been revoked (the row then goes).
func (x *Dashboard) current(r *http.Request) (*session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil, nil
	}
	ctx := r.Context()
	row, err := findSession(ctx, x.d.DB, hashToken(c.Value), x.d.Clock.Now())
	if err != nil || row == nil {
		return nil, err
	}
	secret, err := x.d.Box.Open(row.sealedKey)
	if err != nil { // sealed under another secret key: the session cannot be used
		x.log.Warn("dashboard: a session's key does not open", "err", err)
		return nil, deleteSession(ctx, x.d.DB, row.hash)
	}
	key, err := x.d.Workspaces.Authenticate(ctx, string(secret))
	if apierr.Is(err, "unauthorized") || (err == nil && (key.ID != row.keyID || key.WorkspaceID != row.workspaceID)) {
		return nil, deleteSession(ctx, x.d.DB, row.hash)
	}
	if err != nil {
		return nil, err
	}
	return &session{row: row, key: key}, nil
}

// start makes a session for key (secret is its value) and sets the cookie.
func (x *Dashboard) start(w http.ResponseWriter, r *http.Request, key *workspaces.Key, secret string, owned bool) error {
	ctx := r.Context()
	now := x.d.Clock.Now()
	x.sweep(ctx, now)
	sealed, err := x.d.Box.Seal([]byte(secret))
	if err != nil {
		return err
	}
	token := ids.Secret(32)
	row := sessionRow{hash: hashToken(token), workspaceID: key.WorkspaceID, keyID: key.ID, sealedKey: sealed,
		ownedKey: owned, csrf: ids.Secret(24), expiresAt: now.Add(SessionTTL)}
	if err := insertSession(ctx, x.d.DB, row, now); err != nil {
		return err
	}
	http.SetCookie(w, x.cookie(sessionCookie, token, SessionTTL))
	return nil
}

// sweep revokes the keys that links made for sessions now expired, then
// drops expired rows; a failure is logged and retried at the next sign-in.
func (x *Dashboard) sweep(ctx context.Context, now time.Time) {
	old, err := expiredOwned(ctx, x.d.DB, now, 100)
	for _, s := range old {
		if err == nil {
			if e := x.d.Workspaces.DeleteKey(ctx, s.workspaceID, "", s.keyID); e != nil && !apierr.Is(e, "not_found") {
				err = e
				break
			}
			err = deleteSession(ctx, x.d.DB, s.hash)
		}
	}
	if err == nil {
		err = deleteExpired(ctx, x.d.DB, now)
	}
	if err != nil {
		x.log.Warn("dashboard: sweeping expired sessions", "err", err)
	}
}

// end signs the session out: its row goes, and so does a key made for it.
func (x *Dashboard) end(ctx context.Context, s *session) error {
	if s.row.ownedKey {
		if err := x.d.Workspaces.DeleteKey(ctx, s.row.workspaceID, "", s.row.keyID); err != nil && !apierr.Is(err, "not_found") {
			return err
		}
	}
	return deleteSession(ctx, x.d.DB, s.row.hash)
}

func (x *Dashboard) cookie(name, value string, ttl time.Duration) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: int(ttl / time.Second), HttpOnly: true,
		Secure: x.secure, SameSite: http.SameSiteStrictMode}
}

func (x *Dashboard) clearCookie(w http.ResponseWriter, name string) {
	c := x.cookie(name, "", 0)
	c.MaxAge = -1
	http.SetCookie(w, c)
}

// signInToken is the sign-in form's token, set as a cookie when absent.
func (x *Dashboard) signInToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(signInCookie); err == nil && len(c.Value) >= 32 && len(c.Value) <= 64 {
		return c.Value
	}
	t := ids.Secret(24)
	http.SetCookie(w, x.cookie(signInCookie, t, time.Hour))
	return t
}

// errCSRF refuses a form without the right token (or from another origin).
var errCSRF = apierr.New(http.StatusForbidden, "csrf", "This form has expired or did not come from this dashboard. Reload the page and try again.")

// Form limits: a form's fields (a template's or a broadcast's html and
// text), and an upload (an import's 8 MB and the form around it).
const (
	maxForm   = 2 << 20
	maxUpload = contacts.MaxImportBytes + 64<<10
)

// checkForm parses a POST's form and checks its token against want, and
// its Origin (when the browser sends one) against the request's host.
func checkForm(w http.ResponseWriter, r *http.Request, want string) error {
	// A file upload (the CSV import) may carry an import's whole 8 MB,
	// held in memory as the API holds an import's body.
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	upload := mt == "multipart/form-data"
	limit := int64(maxForm)
	if upload {
		limit = maxUpload
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	var err error
	if upload {
		err = r.ParseMultipartForm(limit)
	} else {
		err = r.ParseForm()
	}
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		e := apierr.TooLarge("form_too_large", "The form is over %d MB.", limit>>20)
		if upload {
			e = e.WithNext("Split the file and import the parts one after the other.")
		}
		return e
	}
	if e, ok := apierr.As(err); ok { // a body bodylimit cut: 408 or 503
		return e
	}
	if err != nil {
		return apierr.InvalidRequest("The form could not be read.")
	}
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			return errCSRF
		}
	}
	got := r.PostForm.Get("csrf")
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errCSRF
	}
	return nil
}

// allowSignIn counts a sign-in attempt against the client address.
func (x *Dashboard) allowSignIn(r *http.Request) error {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	res, err := x.d.Limiter.Allow(r.Context(), "dashboard-signin:"+host, SignInLimit)
	if err != nil {
		x.log.Warn("dashboard: rate limiter unavailable", "err", err)
		return nil
	}
	if !res.Allowed {
		return apierr.New(http.StatusTooManyRequests, "rate_limited", "Too many sign-in attempts. Wait a minute, then try again.").
			WithRetryAfter(int(res.RetryAfter(x.d.Clock.Now()) / time.Second))
	}
	return nil
}

// signInForm checks a sign-in form's token and counts the attempt; false
// when it has answered (refused).
func (x *Dashboard) signInForm(w http.ResponseWriter, r *http.Request) bool {
	err := checkForm(w, r, cookieValue(r, signInCookie))
	if err == nil {
		err = x.allowSignIn(r)
	}
	if err != nil {
		x.fail(w, r, nil, err)
		return false
	}
	return true
}

// signIn checks a pasted API key and starts a session with it.
func (x *Dashboard) signIn(w http.ResponseWriter, r *http.Request) {
	if !x.signInForm(w, r) {
		return
	}
	secret := strings.TrimSpace(r.PostForm.Get("key"))
	key, err := x.d.Workspaces.Authenticate(r.Context(), secret)
	if err != nil {
		if apierr.Is(err, "unauthorized") {
			x.render(w, r, nil, http.StatusUnauthorized, "signin", signInView{Token: x.signInToken(w, r), Error: "That key is not valid: it may be mistyped or revoked."})
			return
		}
		x.fail(w, r, nil, err)
		return
	}
	if err := x.start(w, r, key, secret, false); err != nil {
		x.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// redeemLink uses a one-time link: it makes a key for the session (every
// scope, named after the link) and signs in with it.
func (x *Dashboard) redeemLink(w http.ResponseWriter, r *http.Request) {
	if !x.signInForm(w, r) {
		return
	}
	ctx := r.Context()
	ws, err := useLink(ctx, x.d.DB, hashToken(r.PathValue("token")), x.d.Clock.Now())
	if err != nil {
		x.fail(w, r, nil, err)
		return
	}
	if ws == "" {
		x.render(w, r, nil, http.StatusGone, "signin", signInView{Token: x.signInToken(w, r), Error: "That sign-in link was already used or has expired. Print a new one with mailroom dashboard link."})
		return
	}
	key, secret, err := x.d.Workspaces.CreateSessionKey(ctx, ws, "Dashboard session ("+x.d.Clock.Now().UTC().Format("2006-01-02 15:04")+" UTC)")
	if err == nil {
		err = x.start(w, r, key, secret, true)
	}
	if err != nil {
		x.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func cookieValue(r *http.Request, name string) string {
	if c, err := r.Cookie(name); err == nil {
		return c.Value
	}
	return ""
}

// signInView is the sign-in page's.
type signInView struct {
	Token string // the sign-in form token
	Error string
	Link  string // the link's token, on the link page
}

func (x *Dashboard) signInPage(w http.ResponseWriter, r *http.Request) {
	if s, err := x.current(r); err == nil && s != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	x.render(w, r, nil, http.StatusOK, "signin", signInView{Token: x.signInToken(w, r)})
}

// linkPage shows a link's button: the GET changes nothing (a link may be
// fetched by a scanner or a preview); the button's POST signs in.
func (x *Dashboard) linkPage(w http.ResponseWriter, r *http.Request) {
	x.render(w, r, nil, http.StatusOK, "signin", signInView{Token: x.signInToken(w, r), Link: r.PathValue("token")})
}

func (x *Dashboard) signOut(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := x.end(r.Context(), s); err != nil {
		return err
	}
	x.clearCookie(w, sessionCookie)
	http.Redirect(w, r, "/sign-in", http.StatusSeeOther)
	return nil
}

// errScope answers a page the session's key may not see.
func errScope(scope string) error {
	return apierr.New(http.StatusForbidden, "insufficient_scope", "The API key you signed in with lacks the %s scope, so this page is not available.", scope)
}

// errBound answers a workspace-wide page to a session whose key is bound to
// a mailbox.
func errBound(mailboxID string) error {
	return apierr.New(http.StatusForbidden, "insufficient_scope", "The API key you signed in with is bound to mailbox %s, so only that mailbox's pages are available.", mailboxID)
}

var errNoSession = errors.New("no session")
