package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"mailroom/internal/testkit/browser"
	"mailroom/internal/testkit/testapp"
)

// waitFrame waits until the frame matching css shows want.
func waitFrame(t *testing.T, b *browser.Browser, css, want string) {
	t.Helper()
	testapp.Eventually(t, browser.Timeout, func() bool { return strings.Contains(b.FrameText(t, css), want) },
		"the frame %s never showed %q; it shows %q", css, want, b.FrameText(t, css))
}

// TestLaterAreasInBrowser drives the later areas in headless Chromium.
func TestLaterAreasInBrowser(t *testing.T) {
	b := browser.Start(t)
	a := testapp.Start(t)
	b.Open(t, a.URL+"/sign-in")
	b.WaitText(t, "Workspace API key")
	b.Do(t, chromedp.SendKeys(chromedp.CSS("#key"), a.Key))
	b.Click(t, "#sign-in")
	b.WaitText(t, "Last 30 days")

	t.Run("edit a template; the preview follows the typing", func(t *testing.T) {
		b.Open(t, a.URL+"/templates/new")
		b.WaitText(t, "New template")
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#t-name"), "Welcome mail"),
			chromedp.SendKeys(chromedp.CSS("#t-subject"), "Hello {{ first_name }}"),
			chromedp.SendKeys(chromedp.CSS("#t-html"), "<p>First draft for {{ first_name }}</p>"))
		testapp.Eventually(t, browser.Timeout, func() bool {
			return strings.Contains(b.FrameText(t, "#preview"), "First draft for [first_name]")
		}, "the preview never showed the typed draft: %q", b.FrameText(t, "#preview"))
		b.Click(t, "#save-template")
		b.WaitText(t, "The template is saved.")
		id := browser.Eval[string](t, b, "location.pathname.split('/').pop()")
		waitFrame(t, b, "#preview", "First draft for [first_name]")
		// Edit the saved template: the preview changes as the person types.
		browser.Eval[string](t, b, "document.querySelector('#t-html').value = ''")
		b.Do(t, chromedp.SendKeys(chromedp.CSS("#t-html"), "<h1>Second draft, {{ first_name }}</h1>"))
		waitFrame(t, b, "#preview", "Second draft, [first_name]")
		b.Click(t, "#t-publish")
		b.Click(t, "#save-template")
		b.WaitText(t, "sends use it now")
		r := a.Do("GET", "/v1/templates/"+id+"/versions", nil).JSON()
		vs := r["versions"].([]any)
		latest := vs[0].(map[string]any)
		if len(vs) != 2 || latest["published"] != true || !strings.Contains(latest["html"].(string), "Second draft") {
			t.Fatalf("after the edit: %v", r)
		}
	})
}
