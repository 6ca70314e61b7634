// Package apierr is the error value every service returns when a request cannot
// be served. It carries the spec's stable error code and HTTP status; the HTTP
// layer alone decides which of the spec's two body shapes (nested or flat) a
// route family uses, so services never know about HTTP bodies.
package apierr

import (
	"errors"
	"fmt"
)

// HTTP statuses the spec gives to answers, named here so that services can
// say which one applies without importing net/http (apierr_test holds them
// equal to net/http's).
const (
	StatusOK                    = 200
	StatusAccepted              = 202
	StatusBadRequest            = 400
	StatusUnauthorized          = 401
	StatusPaymentRequired       = 402
	StatusForbidden             = 403
	StatusNotFound              = 404
	StatusConflict              = 409
	StatusRequestEntityTooLarge = 413
	StatusUnprocessableEntity   = 422
	StatusInternalServerError   = 500
	StatusServiceUnavailable    = 503
	StatusInsufficientStorage   = 507
)

// Error is a client-visible failure with the spec's code.
type Error struct {
	Status  int    // HTTP status
	Code    string // the spec's stable code, e.g. "missing_from"
	Message string // prose for people; may change over time
	Next    string // optional advice (nested shape "next", flat shape "hint")
	// Extra holds additional members written inside the error object of the
	// nested shape (e.g. "mailboxes" on domain_in_use) or beside it in the flat one.
	Extra map[string]any
	// RetryAfter, when positive, is the seconds after which the same
	// request may succeed (a quota's reset): the HTTP layer writes it as
	// Retry-After.
	RetryAfter int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New builds an Error.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithNext returns a copy carrying advice for the caller.
func (e *Error) WithNext(next string) *Error {
	c := *e
	c.Next = next
	return &c
}

// WithRetryAfter returns a copy telling the caller to wait seconds (at least 1).
func (e *Error) WithRetryAfter(seconds int) *Error {
	c := *e
	c.RetryAfter = max(seconds, 1)
	return &c
}

// With returns a copy carrying one extra member.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = make(map[string]any, len(e.Extra)+1)
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	c.Extra[key] = value
	return &c
}

// As extracts an *Error from err, if there is one.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Is reports whether err carries the given code.
func Is(err error, code string) bool {
	e, ok := As(err)
	return ok && e.Code == code
}

// Common constructors for codes used across many resources.

// NotFound is the spec's 404 for an id that is not on the workspace.
func NotFound(what string) *Error {
	return New(StatusNotFound, "not_found", "No %s with that id on this workspace.", what)
}

// InvalidRequest is a 400 for a body or query of the wrong shape.
func InvalidRequest(format string, args ...any) *Error {
	return New(StatusBadRequest, "invalid_request", format, args...)
}

// Invalid422 is a 422 with a given code.
func Invalid422(code, format string, args ...any) *Error {
	return New(StatusUnprocessableEntity, code, format, args...)
}

// BadRequest is a 400 with a given code.
func BadRequest(code, format string, args ...any) *Error {
	return New(StatusBadRequest, code, format, args...)
}

// Conflict is a 409 with a given code.
func Conflict(code, format string, args ...any) *Error {
	return New(StatusConflict, code, format, args...)
}

// Internal is the spec's 500; the message never leaks internals.
func Internal() *Error {
	return New(StatusInternalServerError, "internal_error", "Something went wrong on our side; quote the x-request-id header to support.")
}

// Unauthorized is a 401 with a given code.
func Unauthorized(code, format string, args ...any) *Error {
	return New(StatusUnauthorized, code, format, args...)
}

// PaymentRequired is a 402 with a given code: a plan or installation limit.
func PaymentRequired(code, format string, args ...any) *Error {
	return New(StatusPaymentRequired, code, format, args...)
}

// Forbidden is a 403 with a given code.
func Forbidden(code, format string, args ...any) *Error {
	return New(StatusForbidden, code, format, args...)
}

// TooLarge is a 413 with a given code.
func TooLarge(code, format string, args ...any) *Error {
	return New(StatusRequestEntityTooLarge, code, format, args...)
}

// StorageFull is the 507 of a node whose disk is (nearly) full: nothing was
// done, and the same request may succeed once space is freed.
func StorageFull() *Error {
	return New(StatusInsufficientStorage, "storage_full", "The server is out of storage space; nothing was done.").
		WithNext("Retry after Retry-After seconds; the operator has been told in the logs.").WithRetryAfter(30)
}

// Unavailable is the 503 of a node that cannot reach its database: nothing
// was done, and the same request may succeed shortly.
func Unavailable() *Error {
	return New(StatusServiceUnavailable, "service_unavailable", "The service is temporarily unavailable (its database cannot be reached); nothing was done.").
		WithNext("Retry after Retry-After seconds with the same idempotency_key.").WithRetryAfter(10)
}
