package dashboard

import (
	"strings"
	"testing"
)

// TestNeuter: a message's rendered copy keeps its content and styles and
// loses every element that would open a connection or navigate.
func TestNeuter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`<p style="color:red">Hi &amp; bye</p>`, `<p style="color:red">Hi &amp; bye</p>`},
		{`<style>p > b { color: red }</style><b>x</b>`, `<style>p > b { color: red }</style><b>x</b>`},
		{`a<iframe src="http://h/"><p>inside</p></iframe>b`, `ab`},
		{`a<IFRAME SRC=//h/ />b`, `ab`},
		{`<frameset><frame src="http://h/"></frameset>x`, `x`},
		{`<object data="http://h/"><object data="http://i/">in</object>fallback</object>x`, `x`},
		{`<embed src="http://h/">x`, `x`},
		{`<applet code="a" codebase="http://h/">in</applet>x`, `x`},
		{`<link rel="preconnect" href="http://h/"><link rel=dns-prefetch href=//h><link rel="prefetch" href="http://h/a">x`, `x`},
		{`<link rel="preload" as="image" href="http://h/a"><link rel=stylesheet href=http://h/s.css>x`, `x`},
		{`<meta http-equiv="refresh" content="0;url=http://h/"><meta HTTP-EQUIV=Content-Security-Policy content="x"><meta charset="utf-8">x`, `<meta charset="utf-8">x`},
		{`<base href="http://h/">x`, `x`},
		{`<svg><a href="#">y</a></svg>`, `<svg><a href="#">y</a></svg>`},
	} {
		if got := neuter(tc.in); got != tc.want {
			t.Errorf("neuter(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"iframe", "frame", "object", "embed", "link", "base", "http-equiv"} {
		if out := neuter(`<html><head><link rel=preconnect href=//h><base href=//h><meta http-equiv=refresh content=0></head><body><iframe src=//h></iframe><frame src=//h><object data=//h></object><embed src=//h>ok</body></html>`); strings.Contains(strings.ToLower(out), bad) {
			t.Errorf("%q left in %q", bad, out)
		}
	}
}
