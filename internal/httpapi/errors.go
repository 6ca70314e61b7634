package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/store"
)

// writeError renders err in the error shape of the request's route
// (routes.go); rate_limited is flat everywhere, as the spec says. Errors
// that are not *apierr.Error answer as publicError says.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	// A key a send took on trust (workspaces.AuthenticateForSend) is read
	// again before anything but a 401 tells its holder about the request.
	if k := apiKey(r); k != nil {
		// Not the request's context: a body cut at its deadline (408) has
		// cancelled it, and the answer still needs the key confirmed.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		if cerr := k.Confirm(ctx); cerr != nil {
			err = cerr
		}
	}
	e := publicError(r, err)
	if errors.Is(err, errTooLarge) {
		e, _ = apierr.As(errTooLarge)
	}
	noteError(r, e.Code)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
		if e.Status == http.StatusTooManyRequests { // the spec: on a 429 it is always 0
			w.Header().Set("RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Remaining", "0")
		}
	}
	shape := routeShape(r)
	if e.Code == "rate_limited" {
		shape = flat
	}
	writeErrorShape(w, e, shape)
}

// publicError is err as the caller may see it: a service's *apierr.Error,
// or for any other error, logged, 507 storage_full when the database
// refused the write for lack of space, 503 service_unavailable when it
// could not be reached (both temporary), else 500 internal_error.
func publicError(r *http.Request, err error) *apierr.Error {
	if e, ok := apierr.As(err); ok {
		return e
	}
	switch {
	case store.IsDiskFull(err):
		slog.WarnContext(r.Context(), "storage full", "err", err, "request_id", requestID(r), "path", r.URL.Path)
		return apierr.StorageFull()
	case store.IsUnavailable(err):
		slog.WarnContext(r.Context(), "database unavailable", "err", err, "request_id", requestID(r), "path", r.URL.Path)
		return apierr.Unavailable()
	}
	slog.ErrorContext(r.Context(), "internal error", "err", err, "request_id", requestID(r), "path", r.URL.Path)
	return apierr.Internal().WithNext("Quote x-request-id " + requestID(r) + " to support.")
}

func writeErrorShape(w http.ResponseWriter, e *apierr.Error, shape errShape) {
	if shape == flat {
		writeJSON(w, e.Status, flatError{Error: e.Code, Message: e.Message, Hint: e.Next, Name: e.Code, StatusCode: e.Status, extra: e.Extra})
		return
	}
	writeJSON(w, e.Status, nestedError{Error: errorObjectOf(e), Message: e.Message, Name: e.Code, StatusCode: e.Status})
}

// nestedError is the nested shape: { error: { code, message, next } }, with
// message, name (the code) and statusCode beside it, where the Resend SDKs
// read an error (docs/decisions.md, "Errors an SDK can read").
type nestedError struct {
	Error      errorObject `json:"error"`
	Message    string      `json:"message"`
	Name       string      `json:"name"`
	StatusCode int         `json:"statusCode"`
}

// errorObject is the inner object of the nested shape; a batch entry that
// failed carries one too. The error's Extra members sit beside code.
type errorObject struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Next    *string `json:"next"` // null when there is no advice
	extra   map[string]any
}

func errorObjectOf(e *apierr.Error) errorObject {
	o := errorObject{Code: e.Code, Message: e.Message, extra: e.Extra}
	if e.Next != "" {
		o.Next = &e.Next
	}
	return o
}

func (o errorObject) MarshalJSON() ([]byte, error) {
	type fields errorObject // the same fields without this method
	return withExtra(fields(o), o.extra)
}

// flatError is the flat shape: { error: <code>, message, hint? }, the
// error's Extra members beside them, and name and statusCode for the SDKs.
type flatError struct {
	Error      string `json:"error"`
	Hint       string `json:"hint,omitempty"`
	Message    string `json:"message"`
	Name       string `json:"name"`
	StatusCode int    `json:"statusCode"`
	extra      map[string]any
}

func (f flatError) MarshalJSON() ([]byte, error) {
	type fields flatError
	return withExtra(fields(f), f.extra)
}

// withExtra encodes v, an object, with the members of extra added (an extra
// member named like a field wins, as it always has); the members come out
// in sorted order, as the answers always did.
func withExtra(v any, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, x := range extra {
		all[k] = x
	}
	return json.Marshal(all)
}
