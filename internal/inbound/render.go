package inbound

import (
	"bytes"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// maxBody bounds a composed body; the assembled message has its own 40 MB
// limit in the sending service, which the attachments share.
const maxBody = 1 << 20

// bodyRenderer turns a markdown (or plain text) body into html: CommonMark
// with GitHub's tables, strikethrough and autolinks, line breaks kept (so
// plain text reads as written), raw HTML dropped by goldmark and the result
// sanitised by bluemonday's user-content policy all the same.
type bodyRenderer struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

func newBodyRenderer() *bodyRenderer {
	return &bodyRenderer{
		md:     goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify), goldmark.WithRendererOptions(html.WithHardWraps())),
		policy: bluemonday.UGCPolicy(),
	}
}

// Render returns the html and text parts of body: the text part is the
// body as written (markdown reads as text), with CRLF and CR made LF.
func (r *bodyRenderer) Render(body string) (htmlPart, textPart string, err error) {
	text := plainText(body)
	var b bytes.Buffer
	if err := r.md.Convert([]byte(text), &b); err != nil {
		return "", "", err
	}
	return r.policy.Sanitize(b.String()), text, nil
}

// plainText is body as a text part: CRLF and CR made LF, NUL dropped,
// invalid UTF-8 replaced.
func plainText(body string) string {
	text := strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
	return strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", ""), "\uFFFD")
}
