package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"mailroom/internal/apierr"
)

// writeError renders err in the error shape of the request's route
// (routes.go); rate_limited is flat everywhere, as the spec says. Errors
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
	shape := routeShape(r)
	if e.Code == "rate_limited" {
		shape = flat
	}
	writeErrorShape(w, e, shape)
}

func writeErrorShape(w http.ResponseWriter, e *apierr.Error, shape errShape) {
	var body map[string]any
	if shape == flat {
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
