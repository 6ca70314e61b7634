package httpapi_test

import (
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestBroadcastToASegmentAlone: a broadcast with a segment and no audience
// (the Resend SDKs' broadcasts) goes to the contacts the segment's rules
// pick that are subscribed to some audience; a contact on no list is
// skipped as unsubscribed. An audience_id naming a segment is its
// segment_id; without either the broadcast still lacks an audience.
func TestBroadcastToASegmentAlone(t *testing.T) {
	a := testapp.Start(t)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}).JSON()["id"].(string)
	if r := a.Do("POST", "/v1/audiences/"+aud+"/contacts", []map[string]string{{"email": deliveredTo}}); r.Status != 201 {
		t.Fatalf("member: %d %s", r.Status, r.Body)
	}
	if r := a.Do("POST", "/v1/contacts", map[string]any{"email": "lone@mailroom.test"}); r.Status != 201 {
		t.Fatalf("contact: %d %s", r.Status, r.Body)
	}
	seg := a.Do("POST", "/v1/segments", map[string]any{"name": "everyone"}).JSON()["id"].(string)

	bare := a.Do("POST", "/v1/broadcasts", map[string]any{"from": sandboxFrom, "subject": "Hi", "text": "x"}).JSON()
	if bare["ready"] != false {
		t.Fatalf("no audience nor segment is ready: %v", bare)
	}
	// Resend's audiences are its segments: audience_id: seg_… is the segment.
	r := a.Do("POST", "/v1/broadcasts", map[string]any{"from": sandboxFrom, "audience_id": seg, "subject": "Hi", "text": "Hello {{ first_name }}"})
	if r.Status != 201 || r.JSON()["ready"] != true {
		t.Fatalf("segment alone: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	got := a.Do("GET", "/v1/broadcasts/"+id, nil).JSON()
	if got["segment_id"] != seg || got["audience_id"] != nil {
		t.Fatalf("audience_id naming a segment: %v", got)
	}
	if r := a.Do("POST", "/v1/broadcasts/"+id+"/send", nil); r.Status != 200 || r.JSON()["recipients"] != 2.0 || r.JSON()["skipped"] != 1.0 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	var list struct {
		Recipients []struct {
			Email, Status string
			Reason        *string
		}
	}
	a.Do("GET", "/v1/broadcasts/"+id+"/recipients", nil).Decode(t, &list)
	for _, rc := range list.Recipients {
		switch rc.Email {
		case deliveredTo:
			if rc.Status == "skipped" {
				t.Errorf("the subscriber was skipped: %+v", rc)
			}
		case "lone@mailroom.test":
			if rc.Status != "skipped" || rc.Reason == nil || *rc.Reason != "unsubscribed" {
				t.Errorf("a contact on no list: %+v, want skipped (unsubscribed)", rc)
			}
		default:
			t.Errorf("unexpected recipient %+v", rc)
		}
	}
	if len(list.Recipients) != 2 {
		t.Fatalf("recipients: %+v", list.Recipients)
	}
	if r := a.Do("POST", "/v1/broadcasts", map[string]any{"from": sandboxFrom, "audience_id": seg, "segment_id": "seg_other"}); r.Status != 400 {
		t.Errorf("audience_id and segment_id naming two segments: %d %s", r.Status, r.Body)
	}
}
