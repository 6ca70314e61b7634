package tracking

import (
	"strings"
	"testing"
)

var benchBody = "<html><body><p>Hello Name1, news for City1 (pro plan).</p>" +
	strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n", 180) + "</body></html>"
var benchFooter = strings.Replace(benchBody, "</body>", `<div class="mailroom-unsubscribe-footer">You receive this because you subscribed. <a href="https://mail.example.org/unsubscribe/tok">Unsubscribe</a> | <a href="https://mail.example.org/preferences/tok">Email preferences</a></div></body>`, 1)
var benchLinks = "<html><body><p>Hello Name1</p>" +
	strings.Repeat("<p>Lorem ipsum dolor sit amet, <a href=\"https://shop.example.com/item?id=42&amp;x=1\">consectetur</a> adipiscing elit, sed do eiusmod tempor.</p>\n", 180) + "</body></html>"

// BenchmarkRewrite: a tracked broadcast's 15.7 KB body (bench/broadcast's)
// with the pixel alone, with clicks too but no link, with the footer's
// links alone (the node's own pages, never rewritten), and with 180 links.
func BenchmarkRewrite(b *testing.B) {
	r := Rewriter{Signer: signer(b), PublicURL: "https://mail.example.org"}
	l := Link{WorkspaceID: "ws_06h2gh73hffff6x2pcs635yzv0", EmailID: "em_06h2gh7m8s6jkbb54ax5kgcks0", Issued: issued}
	for _, c := range []struct {
		name, body string
		flags      int
	}{{"opens", benchBody, TrackOpens}, {"both-nolinks", benchBody, TrackOpens | TrackClicks}, {"both-footer", benchFooter, TrackOpens | TrackClicks}, {"both-180links", benchLinks, TrackOpens | TrackClicks}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Rewrite(c.body, "https://t.example", l, c.flags)
			}
		})
	}
}
