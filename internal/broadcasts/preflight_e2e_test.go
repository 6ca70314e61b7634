package broadcasts_test

import (
	"net/http"
	"strings"
	"testing"

	"mailroom/internal/testkit/smtpsink"
)

// TestBroadcastPreflight (#48 item 2): POST /v1/broadcasts/{id}/preflight
// answers the broadcast's problems and the content checks of its html as a
// sample member would get it (here an image without alt, a relative
// link and no text; the footer's unsubscribe link counts), and changes nothing: the
// draft stays a draft with no recipients.
func TestBroadcastPreflight(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 2)
	id := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"audience_id": aud, "from": sandbox, "subject": "Spring",
		"html": `<p>Hello {{ first_name }}</p><img src="https://acme.test/spring.png"><a href="/sale">Sale</a>`}), 201)["id"].(string)

	p := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/preflight", nil), 200)
	failed := []string{}
	for _, f := range p["content"].([]any) {
		if m := f.(map[string]any); m["ok"] == false {
			failed = append(failed, m["check"].(string))
		}
	}
	if p["object"] != "preflight" || p["would_send"] != true || len(p["problems"].([]any)) != 0 || !strings.HasPrefix(p["sample"].(string), "m0000") ||
		strings.Join(failed, ",") != "links,image_alt,text_part" {
		t.Fatalf("preflight: failed %v in %v", failed, p)
	}
	// For a chosen member; one who is not a member answers 404.
	if p := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/preflight", map[string]any{"email": "m00001@example.net"}), 200); p["sample"] != "m00001@example.net" {
		t.Fatalf("chosen member: %v", p)
	}
	if r := a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/preflight", map[string]any{"email": "stranger@example.net"}); r.Status != 404 {
		t.Fatalf("not a member: %d %s", r.Status, r.Body)
	}

	// A broadcast with problems would not send, and lists them.
	bare := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "subject": "x", "html": "<p>x</p>"}), 201)["id"].(string)
	p = mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bare+"/preflight", nil), 200)
	if p["would_send"] != false || !strings.Contains(toJSON(p["problems"]), `"no_audience"`) {
		t.Fatalf("bare draft: %v", p)
	}
	g := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+id, nil), 200)
	if g["status"] != "draft" || g["recipients"] != float64(0) || sink.Count() != 0 {
		t.Fatalf("after the preflight: %v, %d messages", g, sink.Count())
	}
	if r := a.Do(http.MethodPost, "/v1/broadcasts/bc_missing/preflight", nil); r.Status != 404 {
		t.Fatalf("unknown broadcast: %d %s", r.Status, r.Body)
	}
}
