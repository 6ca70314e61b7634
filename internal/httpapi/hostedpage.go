package httpapi

import "net/http"

// hostedCSP is the policy of every page a recipient's browser opens from an
// email (confirm, preferences, unsubscribe, a broken tracked link): inline
// styles only, forms that post back here, and no framing, so a button such
// as "Confirm my subscription" cannot be clickjacked.
const hostedCSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// hostedPage sets the hosted pages' security headers before the handler
// runs, so its error answers (a bad link, 429) carry them too.
func hostedPage(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", hostedCSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer") // the tokens in these URLs go nowhere
		next(w, r)
	})
}
