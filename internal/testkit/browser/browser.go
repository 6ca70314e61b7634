// Package browser drives a real headless Chromium (Debian's chromium
// package) through the DevTools protocol with chromedp, for end-to-end
// tests of the hosted pages as a person uses them: open the link, tick a
// box, press the button, read what the page says.
//
// A test that needs a browser calls Start; when none is installed the test
// is skipped, with a message saying what to install. .ci/run installs
// chromium where it can.
package browser

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// candidates are the executables looked for, in order, after
// MAILROOM_TEST_CHROMIUM.
var candidates = []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}

// Path is the browser executable to use, or "" when none is installed.
func Path() string {
	if p := os.Getenv("MAILROOM_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// Flags are the command-line switches every run uses: headless without a
// sandbox (tests run as root in containers) or a GPU, and nothing that
// reaches the network on its own (no QUIC, no background fetches, no
// component updates, no sync). /dev/shm is small in containers, so shared
// memory goes to the temporary directory.
var Flags = []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
	"disable-background-networking", "disable-component-update", "disable-sync", "disable-dev-shm-usage"}

// Browser is one running Chromium with a fresh profile and one tab.
type Browser struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Start launches Chromium for the test (with a fresh --user-data-dir and a
// phone's viewport) and stops it when the test ends; it skips the test
// when no browser is installed.
func Start(t testing.TB) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		t.Skip("no Chromium installed (apt-get install chromium, or set MAILROOM_TEST_CHROMIUM)")
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir())}
	for _, f := range Flags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// The first Run starts the browser (with no timeout on its context,
	// which would stop the browser); fail here, clearly, if it cannot.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(PhoneWidth, PhoneHeight, chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		cancel()
		acancel()
		t.Fatalf("starting %s: %v", path, err)
	}
	b := &Browser{ctx: ctx, cancel: func() { cancel(); acancel() }}
	t.Cleanup(b.cancel)
	return b
}

// NewTab opens another tab in the same browser (a page that must stay
// open while another is looked at); it closes when the test ends.
func (b *Browser) NewTab(t testing.TB) *Browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(PhoneWidth, PhoneHeight, chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	tab := &Browser{ctx: ctx, cancel: cancel}
	t.Cleanup(tab.cancel)
	return tab
}

// PhoneWidth and PhoneHeight are the emulated viewport (CSS pixels), a
// common phone's: pages are checked where they are hardest to lay out.
const (
	PhoneWidth  = 390
	PhoneHeight = 844
)

// Timeout bounds each call below.
const Timeout = 20 * time.Second

func (b *Browser) step(t testing.TB) (context.Context, context.CancelFunc) {
	t.Helper()
	return context.WithTimeout(b.ctx, Timeout)
}

// Do performs actions in the tab, failing the test on an error.
func (b *Browser) Do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := b.step(t)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// Open navigates the tab to url.
func (b *Browser) Open(t testing.TB, url string) {
	t.Helper()
	b.Do(t, chromedp.Navigate(url))
}

// Click clicks the first element matching the CSS selector, as a person
// would (a mouse event at its centre).
func (b *Browser) Click(t testing.TB, css string) {
	t.Helper()
	b.Do(t, chromedp.Click(chromedp.CSS(css)))
}

// Eval evaluates a JavaScript expression in the page (the test reads the
// page with it; the pages under test run none of their own).
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := b.step(t)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("browser: evaluating %s: %v", expr, err)
	}
	return v
}

// Text is the visible text of the page's body.
func (b *Browser) Text(t testing.TB) string {
	t.Helper()
	return Eval[string](t, b, "document.body ? document.body.innerText : ''")
}

// WaitText waits until the page shows want (across a form's navigation)
// and returns the page's text.
func (b *Browser) WaitText(t testing.TB, want string) string {
	t.Helper()
	q, _ := json.Marshal(want)
	expr := "document.readyState === 'complete' && document.body && document.body.innerText.includes(" + string(q) + ")"
	deadline := time.Now().Add(Timeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := b.step(t)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return b.Text(t)
		}
		if time.Now().After(deadline) {
			t.Fatalf("browser: the page never showed %q; it shows:\n%s", want, b.Text(t))
		}
		<-tick.C
	}
}

// FrameText is the visible text of the document in the page's iframe
// matching css ("" while it has none). Chrome runs a sandboxed frame in a
// process of its own, as a target the page's DOM does not reach: it is
// read by attaching to that target (the page's first iframe target, so a
// test reads pages with one frame).
func (b *Browser) FrameText(t testing.TB, css string) string {
	t.Helper()
	ctx, cancel := b.step(t)
	defer cancel()
	// A frame in the page's own process is read through the page.
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const f = document.querySelector(`+quote(css)+`);
		try { return f.contentDocument && f.contentDocument.body ? f.contentDocument.body.innerText : ''; } catch (e) { return ''; } })()`))
	if err != nil {
		t.Fatalf("browser: frame %s: %v", css, err)
	}
	if text != "" {
		return text
	}
	infos, err := chromedp.Targets(ctx)
	if err != nil {
		t.Fatalf("browser: targets: %v", err)
	}
	for _, info := range infos {
		if info.Type != "iframe" {
			continue
		}
		fctx, fcancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(info.TargetID), chromedp.WithDetachOnCancel()) // detach, not close
		sctx, scancel := context.WithTimeout(fctx, Timeout)
		text, err := chromedp.Run(sctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
		scancel()
		fcancel()
		if err == nil {
			return text
		}
	}
	return ""
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Screenshot saves the whole page (beyond the viewport too) as a PNG at
// path, for a person to look at what a test saw.
func (b *Browser) Screenshot(t testing.TB, path string) {
	t.Helper()
	ctx, cancel := b.step(t)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("browser: screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
