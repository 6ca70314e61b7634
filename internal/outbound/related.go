package outbound

import (
	"bytes"
	"strings"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
)

// splitInline parts m's attachments into the inline images its HTML shows
// (a Content-ID that the HTML names as cid:) and the files; without HTML
// every one is a file.
func splitInline(m *Message) (inline, files []Attachment) {
	for _, a := range m.Attachments {
		if a.ContentID != "" && m.HTML != "" && strings.Contains(m.HTML, "cid:"+a.ContentID) {
			inline = append(inline, a)
		} else {
			files = append(files, a)
		}
	}
	return inline, files
}

// buildRelated writes a message whose HTML shows inline images (RFC 2387):
// multipart/related holding the alternative and then each image with its
// Content-ID, inside multipart/mixed with the files when there are any.
func buildRelated(buf *bytes.Buffer, h mail.Header, text, html string, inline, files []Attachment) error {
	related := map[string]string{"type": "multipart/alternative"}
	root := h.Header.Copy()
	if len(files) > 0 {
		root.SetContentType("multipart/mixed", nil)
	} else {
		root.SetContentType("multipart/related", related)
	}
	top, err := message.CreateWriter(buf, root)
	if err != nil {
		return err
	}
	rel := top
	if len(files) > 0 {
		var rh message.Header
		rh.SetContentType("multipart/related", related)
		if rel, err = top.CreatePart(rh); err != nil {
			return err
		}
	}
	var ah message.Header
	ah.SetContentType("multipart/alternative", nil)
	alt, err := rel.CreatePart(ah)
	if err != nil {
		return err
	}
	for _, p := range []struct{ typ, body string }{{"text/plain", text}, {"text/html", html}} {
		ph := textPart(p.typ, p.body).Header
		ph.Set("Content-Disposition", "inline")
		w, err := alt.CreatePart(ph)
		if err != nil {
			return err
		}
		if err := writeClose(w, p.body); err != nil {
			return err
		}
	}
	if err := alt.Close(); err != nil {
		return err
	}
	for _, a := range inline {
		ih, err := partHeader(a, "inline")
		if err != nil {
			return err
		}
		ih.Set("Content-ID", "<"+a.ContentID+">")
		if err := writePart(rel, ih, a.Data); err != nil {
			return err
		}
	}
	if len(files) > 0 {
		if err := rel.Close(); err != nil {
			return err
		}
		for _, a := range files {
			fh, err := partHeader(a, "attachment")
			if err != nil {
				return err
			}
			if err := writePart(top, fh, a.Data); err != nil {
				return err
			}
		}
	}
	return top.Close()
}

func writePart(parent *message.Writer, h message.Header, data []byte) error {
	w, err := parent.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}
