package apierr_test

import (
	"net/http"
	"testing"

	"mailroom/internal/apierr"
)

// The named statuses are what services answer with; they must be the wire's.
func TestStatusesAreHTTPs(t *testing.T) {
	for _, c := range []struct{ got, want int }{
		{apierr.StatusOK, http.StatusOK},
		{apierr.StatusAccepted, http.StatusAccepted},
		{apierr.StatusBadRequest, http.StatusBadRequest},
		{apierr.StatusUnauthorized, http.StatusUnauthorized},
		{apierr.StatusPaymentRequired, http.StatusPaymentRequired},
		{apierr.StatusForbidden, http.StatusForbidden},
		{apierr.StatusNotFound, http.StatusNotFound},
		{apierr.StatusConflict, http.StatusConflict},
		{apierr.StatusRequestEntityTooLarge, http.StatusRequestEntityTooLarge},
		{apierr.StatusUnprocessableEntity, http.StatusUnprocessableEntity},
		{apierr.StatusInternalServerError, http.StatusInternalServerError},
		{apierr.StatusServiceUnavailable, http.StatusServiceUnavailable},
		{apierr.StatusInsufficientStorage, http.StatusInsufficientStorage},
	} {
		if c.got != c.want {
			t.Errorf("status %d, net/http says %d (%s)", c.got, c.want, http.StatusText(c.want))
		}
	}
	for _, c := range []struct {
		err  *apierr.Error
		want int
	}{
		{apierr.Unauthorized("unauthorized", "x"), http.StatusUnauthorized},
		{apierr.PaymentRequired("domain_limit_reached", "x"), http.StatusPaymentRequired},
		{apierr.Forbidden("sending_locked", "x"), http.StatusForbidden},
		{apierr.TooLarge("message_too_large", "x"), http.StatusRequestEntityTooLarge},
		{apierr.NotFound("domain"), http.StatusNotFound},
		{apierr.StorageFull(), http.StatusInsufficientStorage},
		{apierr.Unavailable(), http.StatusServiceUnavailable},
	} {
		if c.err.Status != c.want {
			t.Errorf("%s: status %d, want %d", c.err.Code, c.err.Status, c.want)
		}
	}
}
