package httpapi

import (
	"net/http"

	"mailroom/internal/tracking"
)

// pixelGIF is a transparent 1×1 GIF.
var pixelGIF = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

func visitOf(r *http.Request) tracking.Visit {
	return tracking.Visit{Method: r.Method, UserAgent: r.UserAgent(), UserActivated: r.Header.Get("Sec-Fetch-User") == "?1"}
}

// trackClick redirects a tracked link to the URL its token was signed for,
// and nowhere else: nothing in the query is read. A token that does not
// open (tampered, truncated, another kind) gets a page, never a redirect.
func (h *handler) trackClick(w http.ResponseWriter, r *http.Request) {
	target, ok := h.d.Services.Tracking.Click(r.PathValue("token"), visitOf(r))
	if !ok {
		renderPage(w, http.StatusBadRequest, confirmView{Title: "Link not valid",
			Text: "This link is damaged or incomplete. Copy the whole link from the email, or ask the sender for it again."})
		return
	}
	hd := w.Header()
	hd.Set("Location", target)
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusFound)
}

// trackOpen serves the pixel. A bad token gets the same pixel (an email
// client shows nothing broken) and counts nothing.
func (h *handler) trackOpen(w http.ResponseWriter, r *http.Request) {
	h.d.Services.Tracking.Open(r.PathValue("token"), visitOf(r))
	hd := w.Header()
	hd.Set("Content-Type", "image/gif")
	hd.Set("Cache-Control", "no-store, no-cache, must-revalidate, max-age=0")
	hd.Set("Content-Length", "43")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(pixelGIF)
	}
}
