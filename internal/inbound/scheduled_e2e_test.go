package inbound_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// TestScheduledMessages: GET /v1/messages/scheduled lists the receive-side
// bookings still waiting, soonest first, paged, a bound key seeing its
// mailbox's only (and neither reading nor cancelling another's); a
// POST /v1/emails booking is not listed. When its time comes (the clock
// moved, the scheduler's pass run) a booked reply goes out and its sent
// copy joins the thread it answers, as an immediate reply's does.
func TestScheduledMessages(t *testing.T) {
	c := clock.NewFake(time.Now())
	a, inbox := startSMTP(t, testapp.WithClock(c))
	if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{inbox}, sampleMessage(inbox, "Question", "q1@sender.example", "References: <r0@sender.example>\r\n")); err != nil {
		t.Fatal(err)
	}
	to := []any{"delivered@mailroom.test"}
	book := func(name, subject, at string, extra map[string]any) sc {
		body := map[string]any{"to": to, "subject": subject, "body": "later", "send_at": at}
		for k, v := range extra {
			body[k] = v
		}
		return sc{Name: "book " + name, Method: "POST", Path: "/v1/messages", Body: body, Status: 202,
			Shape: shape{"scheduled_id": scenario.Present, "status": "scheduled"}, Save: map[string]string{name: "scheduled_id"}}
	}
	waiting := func(names ...string) []any {
		out := make([]any, len(names))
		for i, n := range names {
			out[i] = shape{"scheduled_id": scenario.Var(n), "status": "scheduled", "message_id": nil}
		}
		return out
	}
	s := scenario.New(a)
	s.Run(t,
		sc{Name: "received", Method: "GET", Path: "/v1/messages", Status: 200, Save: map[string]string{"orig": "messages.0.id", "thread": "messages.0.thread_id"}},
		book("reply", "Re: Question", "in 1 hour", map[string]any{"reply_to_message_id": "{orig}"}),
		book("later", "Later", "in 3 hours", nil),
		book("middle", "Middle", "in 2 hours", nil),
		sc{Name: "a POST /v1/emails booking", Method: "POST", Path: "/v1/emails", Status: 202,
			Body: map[string]any{"from": inbox, "to": to, "subject": "plain", "text": "x", "send_at": "in 30 min"}, Save: map[string]string{"plain": "id"}},
		sc{Name: "support", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"local_part": "support"}, Status: 201, Save: map[string]string{"support": "id"}},
		sc{Name: "bound key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "s", "mailbox_id": "{support}"}, Status: 201, Save: map[string]string{"bound": "key"}},
		sc{Name: "bound: book", Method: "POST", Path: "/v1/messages", Key: "{bound}", Status: 202,
			Body: map[string]any{"to": to, "subject": "From support", "body": "b", "send_at": "in 90 min"}, Save: map[string]string{"supportBooked": "scheduled_id"}},

		sc{Name: "soonest first, receive-side only", Method: "GET", Path: "/v1/messages/scheduled", Status: 200,
			Shape: shape{"has_more": false, "next_cursor": nil, "scheduled": waiting("reply", "supportBooked", "middle", "later")}},
		sc{Name: "the reply's entry", Method: "GET", Path: "/v1/messages/scheduled?limit=1", Status: 200,
			Shape: shape{"has_more": true, "scheduled": []any{shape{"scheduled_id": scenario.Var("reply"), "email_id": scenario.Prefix("em_"),
				"thread_id": scenario.Var("thread"), "from": inbox, "to": to, "cc": []any{}, "subject": "Re: Question", "send_at": scenario.Present,
				"mailbox_id": scenario.Present, "last_error": nil, "created_at": scenario.Present}}}},
		sc{Name: "first page", Method: "GET", Path: "/v1/messages/scheduled?limit=2", Status: 200,
			Shape: shape{"has_more": true, "scheduled": waiting("reply", "supportBooked")}, Save: map[string]string{"next": "next_cursor"}},
		sc{Name: "second page", Method: "GET", Path: "/v1/messages/scheduled?limit=2&cursor={next}", Status: 200,
			Shape: shape{"has_more": false, "scheduled": waiting("middle", "later")}},
		sc{Name: "limit over 100", Method: "GET", Path: "/v1/messages/scheduled?limit=101", Status: 422, Code: "invalid_limit"},
		sc{Name: "one mailbox", Method: "GET", Path: "/v1/messages/scheduled?mailbox_id={support}", Status: 200,
			Shape: shape{"scheduled": waiting("supportBooked")}},

		sc{Name: "bound: its mailbox's only", Method: "GET", Path: "/v1/messages/scheduled", Key: "{bound}", Status: 200,
			Shape: shape{"scheduled": waiting("supportBooked")}},
		sc{Name: "bound: reads its own", Method: "GET", Path: "/v1/messages/scheduled/{supportBooked}", Key: "{bound}", Status: 200,
			Shape: shape{"status": "scheduled", "mailbox_id": scenario.Var("support"), "from": "support@" + strings.SplitN(inbox, "@", 2)[1]}},
		sc{Name: "bound: not another mailbox's", Method: "GET", Path: "/v1/messages/scheduled/{reply}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: not a POST /v1/emails booking", Method: "GET", Path: "/v1/messages/scheduled/{plain}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: cannot cancel another mailbox's", Method: "DELETE", Path: "/v1/messages/scheduled/{reply}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "unbound: a POST /v1/emails booking reads without a mailbox", Method: "GET", Path: "/v1/messages/scheduled/{plain}", Status: 200,
			Shape: shape{"status": "scheduled", "mailbox_id": nil, "subject": "plain"}},

		sc{Name: "rescheduled sooner", Method: "PATCH", Path: "/v1/emails/{later}", Body: map[string]any{"send_at": "in 10 min"}, Status: 200},
		sc{Name: "cancelled", Method: "DELETE", Path: "/v1/messages/scheduled/{middle}", Status: 200, Shape: shape{"cancelled": true}},
		sc{Name: "the list follows", Method: "GET", Path: "/v1/messages/scheduled", Status: 200,
			Shape: shape{"scheduled": waiting("later", "reply", "supportBooked")}},
		sc{Name: "the cancelled one's outcome", Method: "GET", Path: "/v1/messages/scheduled/{middle}", Status: 200, Shape: shape{"status": "cancelled", "message_id": nil}},
		sc{Name: "nothing in the thread yet", Method: "GET", Path: "/v1/threads/{thread}", Status: 200, Shape: shape{"message_count": 1}},
	)

	// The time of the reply (and of "later" and the plain one) comes.
	c.Advance(65 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := a.Sending().PromoteDue(ctx); err != nil {
		t.Fatal(err)
	}
	s.Run(t,
		sc{Name: "only the support booking waits", Method: "GET", Path: "/v1/messages/scheduled", Status: 200, Shape: shape{"scheduled": waiting("supportBooked")}},
		sc{Name: "the reply went; its sent copy is named", Method: "GET", Path: "/v1/messages/scheduled/{reply}", Status: 200,
			Shape: shape{"message_id": scenario.Prefix("msg_"), "thread_id": scenario.Var("thread")}, Save: map[string]string{"copy": "message_id"},
			Check: func(t testing.TB, r *testapp.Response) {
				if st := r.JSON()["status"]; st == "scheduled" || st == "cancelled" || st == "failed" {
					t.Fatalf("status %v after its time", st)
				}
			}},
		sc{Name: "the copy joined the thread, threaded as a reply", Method: "GET", Path: "/v1/threads/{thread}", Status: 200,
			Shape: shape{"message_count": 2, "messages": []any{shape{"direction": "received"}, shape{"id": scenario.Var("copy"), "direction": "sent",
				"from": inbox, "to": to, "subject": "Re: Question", "in_reply_to": "q1@sender.example",
				"references": []any{"r0@sender.example", "q1@sender.example"}, "text": "later"}}}},
		sc{Name: "an ordinary sent message in /v1/messages", Method: "GET", Path: "/v1/messages?thread_id={thread}", Status: 200,
			Shape: shape{"messages": []any{shape{"id": scenario.Var("copy"), "direction": "sent"}, shape{"direction": "received"}}}},
		sc{Name: "the new conversation went into its own thread", Method: "GET", Path: "/v1/messages/scheduled/{later}", Status: 200,
			Shape: shape{"message_id": scenario.Prefix("msg_"), "thread_id": nil}},
		sc{Name: "the POST /v1/emails booking stored nothing", Method: "GET", Path: "/v1/messages/scheduled/{plain}", Status: 200,
			Shape: shape{"message_id": nil}},
		sc{Name: "too late to cancel", Method: "DELETE", Path: "/v1/messages/scheduled/{reply}", Status: 409, Code: "too_late_to_cancel"},
	)
	// The promotion ran once: a second pass stores no second copy.
	if _, err := a.Sending().PromoteDue(ctx); err != nil {
		t.Fatal(err)
	}
	s.Run(t, sc{Name: "still two", Method: "GET", Path: "/v1/threads/{thread}", Status: 200, Shape: shape{"message_count": 2}})
}

// TestScheduledIDs: a receive-side booking is handed out as sch_ (the
// contract's prefix) with its email's em_ id beside it; the routes that take
// a scheduled id accept both, so ids handed out before sch_ (the email id)
// still work, and a sch_ id names a receive-side booking only.
func TestScheduledIDs(t *testing.T) {
	a, _ := startSMTP(t)
	to := []any{"delivered@mailroom.test"}
	s := scenario.New(a)
	s.Run(t,
		sc{Name: "book", Method: "POST", Path: "/v1/messages", Body: map[string]any{"to": to, "subject": "Later", "body": "b", "send_at": "in 1 hour"},
			Status: 202, Shape: shape{"scheduled_id": scenario.Prefix("sch_"), "email_id": scenario.Prefix("em_"), "status": "scheduled"},
			Save: map[string]string{"sch": "scheduled_id", "em": "email_id"}},
		sc{Name: "listed by its sch_ id", Method: "GET", Path: "/v1/messages/scheduled", Status: 200,
			Shape: shape{"scheduled": []any{shape{"scheduled_id": scenario.Var("sch"), "email_id": scenario.Var("em")}}}},
		sc{Name: "read by sch_", Method: "GET", Path: "/v1/messages/scheduled/{sch}", Status: 200,
			Shape: shape{"scheduled_id": scenario.Var("sch"), "email_id": scenario.Var("em"), "status": "scheduled", "mailbox_id": scenario.Present}},
		sc{Name: "read by the old em_ id", Method: "GET", Path: "/v1/messages/scheduled/{em}", Status: 200,
			Shape: shape{"scheduled_id": scenario.Var("sch"), "status": "scheduled", "mailbox_id": scenario.Present}},
		sc{Name: "rescheduled by sch_", Method: "PATCH", Path: "/v1/emails/{sch}", Body: map[string]any{"send_at": "in 2 hours"}, Status: 200,
			Shape: shape{"id": scenario.Var("sch"), "status": "scheduled"}},
		sc{Name: "the email moved", Method: "GET", Path: "/v1/emails/{em}", Status: 200, Shape: shape{"last_event": "email.rescheduled"}},

		sc{Name: "a POST /v1/emails booking", Method: "POST", Path: "/v1/emails", Status: 202,
			Body: map[string]any{"from": "onboarding@mailroom.test", "to": to, "subject": "plain", "text": "x", "send_at": "in 30 min"}, Save: map[string]string{"plain": "id"}},
	)
	// sch_ with a POST /v1/emails booking's id in it names nothing here.
	s.Set("plainSch", "sch_"+strings.TrimPrefix(s.Get("plain"), "em_"))
	s.Run(t,
		sc{Name: "sch_ names no POST /v1/emails booking", Method: "GET", Path: "/v1/messages/scheduled/{plainSch}", Status: 404, Code: "not_found"},
		sc{Name: "nor cancels one", Method: "DELETE", Path: "/v1/messages/scheduled/{plainSch}", Status: 404, Code: "not_found"},
		sc{Name: "the plain one still reads by its id", Method: "GET", Path: "/v1/messages/scheduled/{plain}", Status: 200, Shape: shape{"status": "scheduled"}},
		sc{Name: "made-up sch_", Method: "GET", Path: "/v1/messages/scheduled/sch_nope", Status: 404, Code: "not_found"},

		sc{Name: "cancelled by the old em_ id", Method: "DELETE", Path: "/v1/messages/scheduled/{em}", Status: 200, Shape: shape{"cancelled": true}},
		sc{Name: "its outcome by sch_", Method: "GET", Path: "/v1/messages/scheduled/{sch}", Status: 200, Shape: shape{"status": "cancelled"}},
	)
}
