package dashboard

import (
	"net/http"
	"strings"

	"mailroom/internal/broadcasts"
)

func (x *Dashboard) broadcasts(w http.ResponseWriter, r *http.Request, s *session) error {
	bs, err := x.d.Broadcasts.List(r.Context(), s.key.WorkspaceID, listRows, nil)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "broadcasts", bs)
	return nil
}

type broadcastView struct {
	Broadcast broadcasts.Broadcast
	Stats     broadcasts.Stats
	Tested    *testResult // the test send just made
}

// testResult is a test send's outcome.
type testResult struct {
	Sent    int
	Skipped []string
}

func (x *Dashboard) broadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	return x.showBroadcast(w, r, s, nil)
}

// testBroadcast sends the broadcast to a few addresses now, as POST
// /v1/broadcasts/{id}/test does, and shows how many went.
func (x *Dashboard) testBroadcast(w http.ResponseWriter, r *http.Request, s *session) error {
	var to []string
	for _, a := range strings.Split(r.PostForm.Get("to"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			to = append(to, a)
		}
	}
	n, skipped, err := x.d.Broadcasts.Test(r.Context(), s.key.WorkspaceID, r.PathValue("id"), to)
	if err != nil {
		return err
	}
	return x.showBroadcast(w, r, s, &testResult{Sent: n, Skipped: skipped})
}

func (x *Dashboard) showBroadcast(w http.ResponseWriter, r *http.Request, s *session, tested *testResult) error {
	b, err := x.d.Broadcasts.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	st, err := x.d.Broadcasts.Stats(r.Context(), b)
	if err != nil {
		return err
	}
	x.render(w, r, s, http.StatusOK, "broadcast", broadcastView{Broadcast: b, Stats: st, Tested: tested})
	return nil
}

// broadcastBody is the broadcast's content as written (merge fields not
// filled), for its sandboxed iframe.
func (x *Dashboard) broadcastBody(w http.ResponseWriter, r *http.Request, s *session) error {
	b, err := x.d.Broadcasts.Get(r.Context(), s.key.WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	serveBody(w, r, b.HTML, b.Text)
	return nil
}
