package broadcasts_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestRerunKeepsTemplateVersion: a fan-out run again (as after a crash)
// renders the template version its first run began with, though another
// was published in between; a new broadcast renders the new one.
func TestRerunKeepsTemplateVersion(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 3)
	tpl := mustStatus(t, a.Do(http.MethodPost, "/v1/templates", map[string]any{"name": "News", "subject": "News v1", "html": "<p>v1 for {{ email }}</p>", "publish": true}), 201)["id"].(string)
	send := func() string {
		bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "template_id": tpl}), 201)["id"].(string)
		mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
		return bc
	}
	sent := func(bc string) bool {
		r := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)
		return r["status"] == "sent" && r["stats"].(map[string]any)["delivered"] == float64(3)
	}
	bc := send()
	testapp.Eventually(t, 20*time.Second, func() bool { return sent(bc) }, "the first broadcast was never sent")

	mustStatus(t, a.Do(http.MethodPost, "/v1/templates/"+tpl+"/versions", map[string]any{"subject": "News v2", "html": "<p>v2 for {{ email }}</p>"}), 201)
	mustStatus(t, a.Do(http.MethodPost, "/v1/templates/"+tpl+"/publish", map[string]any{"version": 2}), 200)

	// The state a crash mid-fan-out leaves: the broadcast sending, a
	// recipient not yet handed over.
	before := sink.Count()
	rerunAfterCrash(t, a, bc, `contact_id = (SELECT MIN(contact_id) FROM broadcast_recipients WHERE broadcast_id = '`+bc+`')`)
	testapp.Eventually(t, 20*time.Second, func() bool { return sink.Count() == before+1 }, "the rerun sent nothing")
	if got := string(sink.Messages()[before].Data); !strings.Contains(got, "Subject: News v1") || !strings.Contains(got, "v1 for") {
		t.Fatalf("the rerun rendered another version:\n%s", got)
	}

	bc2 := send()
	testapp.Eventually(t, 20*time.Second, func() bool { return sent(bc2) }, "the second broadcast was never sent")
	for _, m := range sink.Messages()[before+1:] {
		if !strings.Contains(string(m.Data), "Subject: News v2") {
			t.Fatalf("a new broadcast rendered an old version:\n%s", m.Data)
		}
	}
}
