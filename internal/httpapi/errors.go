package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"mailroom/internal/apierr"
)

// flatFamily reports whether path belongs to a route family that answers
// errors in the spec's flat shape { error: <code>, message?, hint? }. Every
// other family answers the nested shape { error: { code, message, next } }.
// This is the one place that decides it.
func flatFamily(path string) bool {
	for _, p := range []string{"/v1/topics", "/v1/suppressions", "/v1/templates"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	if path == "/v1/contacts" || strings.HasPrefix(path, "/v1/contacts/") {
		// The tag, attribute and subscription routes under a contact are nested.
		parts := strings.Split(strings.TrimPrefix(path, "/v1/contacts/"), "/")
		if len(parts) >= 2 {
			switch parts[1] {
			case "tags", "attributes", "subscriptions":
				return false
			}
		}
		return true
	}
	return false
}

// writeError renders err in the shape of the request's route family. Errors
// that are not *apierr.Error are internal faults: logged with the request id
// and answered 500 internal_error without detail.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	// A key a send took on trust (workspaces.AuthenticateForSend) is read
	// again before anything but a 401 tells its holder about the request.
	if k := apiKey(r); k != nil {
		if cerr := k.Confirm(r.Context()); cerr != nil {
			err = cerr
		}
	}
	e, ok := apierr.As(err)
	if !ok {
		slog.ErrorContext(r.Context(), "internal error", "err", err, "request_id", requestID(r), "path", r.URL.Path)
		e = apierr.Internal()
		e = e.WithNext("Quote x-request-id " + requestID(r) + " to support.")
	}
	if errors.Is(err, errTooLarge) {
		e, _ = apierr.As(errTooLarge)
	}
	writeErrorShape(w, e, flatFamily(r.URL.Path) || e.Code == "rate_limited")
}

func writeErrorShape(w http.ResponseWriter, e *apierr.Error, flat bool) {
	var body map[string]any
	if flat {
		body = map[string]any{"error": e.Code, "message": e.Message}
		if e.Next != "" {
			body["hint"] = e.Next
		}
		for k, v := range e.Extra {
			body[k] = v
		}
	} else {
		inner := map[string]any{"code": e.Code, "message": e.Message, "next": nil}
		if e.Next != "" {
			inner["next"] = e.Next
		}
		for k, v := range e.Extra {
			inner[k] = v
		}
		body = map[string]any{"error": inner}
	}
	writeJSON(w, e.Status, body)
}
