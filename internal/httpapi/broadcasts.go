package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/broadcasts"
	"mailroom/internal/contentcheck"
	"mailroom/internal/sending"
)

type broadcastRequest struct {
	From              *string `json:"from"`
	AudienceID        *string `json:"audience_id"`
	SegmentID         *string `json:"segment_id"`
	TopicID           *string `json:"topic_id"`
	Subject           *string `json:"subject"`
	Name              *string `json:"name"`
	HTML              *string `json:"html"`
	Text              *string `json:"text"`
	TemplateID        *string `json:"template_id"`
	TemplateVersionID *string `json:"template_version_id"`
	ReplyTo           *string `json:"reply_to"`
	TrackOpens        *bool   `json:"track_opens"`
	TrackClicks       *bool   `json:"track_clicks"`
	UnsubscribeFooter *bool   `json:"unsubscribe_footer"`
	// The Resend SDKs' additions: send (create only: send at once, or at
	// scheduled_at), and broadcast_id, the path's id repeated (update).
	Send        *bool   `json:"send"`
	ScheduledAt *string `json:"scheduled_at"`
	BroadcastID *string `json:"broadcast_id"`
}

// segmentAudience reads an audience_id that names a segment as its
// segment_id: Resend's audiences are its segments (docs/resend.md).
func (r *broadcastRequest) segmentAudience() error {
	if r.AudienceID == nil || !strings.HasPrefix(*r.AudienceID, "seg_") {
		return nil
	}
	if r.SegmentID != nil && *r.SegmentID != *r.AudienceID {
		return apierr.InvalidRequest("audience_id names segment %s and segment_id another; pass one.", *r.AudienceID)
	}
	r.SegmentID, r.AudienceID = r.AudienceID, nil
	return nil
}

func (r broadcastRequest) input() broadcasts.Input {
	return broadcasts.Input{From: r.From, Name: r.Name, ReplyTo: r.ReplyTo, Subject: r.Subject, HTML: r.HTML, Text: r.Text,
		AudienceID: r.AudienceID, SegmentID: r.SegmentID, TopicID: r.TopicID, TemplateID: r.TemplateID, TrackOpens: r.TrackOpens, TrackClicks: r.TrackClicks,
		TemplateVersionID: r.TemplateVersionID, UnsubscribeFooter: r.UnsubscribeFooter}
}

type problemJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type broadcastCreated struct {
	ID       string        `json:"id"`
	Status   string        `json:"status"`
	Ready    bool          `json:"ready"`
	Problems []problemJSON `json:"problems"`
}

type statsJSON struct {
	Total      int `json:"total"`
	Pending    int `json:"pending"`
	Sent       int `json:"sent"`
	Delivered  int `json:"delivered"`
	Bounced    int `json:"bounced"`
	Complained int `json:"complained"`
	Failed     int `json:"failed"`
	Skipped    int `json:"skipped"`
	engagementJSON
}

type broadcastJSON struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	From       string  `json:"from"`
	ReplyTo    *string `json:"reply_to"`
	Subject    string  `json:"subject"`
	AudienceID *string `json:"audience_id"`
	SegmentID  *string `json:"segment_id"`
	TopicID    *string `json:"topic_id"`
	TemplateID *string `json:"template_id"`
	// TemplateVersionID is the version asked for, or the one the send
	// rendered; null: the published one at send time.
	TemplateVersionID *string       `json:"template_version_id"`
	TrackOpens        bool          `json:"track_opens"`
	TrackClicks       bool          `json:"track_clicks"`
	UnsubscribeFooter bool          `json:"unsubscribe_footer"`
	ScheduledAt       *string       `json:"scheduled_at"`
	StartedAt         *string       `json:"started_at"`
	FinishedAt        *string       `json:"finished_at"`
	CancelledAt       *string       `json:"cancelled_at"`
	CreatedAt         string        `json:"created_at"`
	UpdatedAt         string        `json:"updated_at"`
	HTML              *string       `json:"html,omitempty"`
	Text              *string       `json:"text,omitempty"`
	Ready             bool          `json:"ready"`
	Problems          []problemJSON `json:"problems"`
	// Recipients is the number of recipients snapshotted at send (0 for a
	// draft), as the send's response counts them.
	Recipients int        `json:"recipients"`
	Stats      *statsJSON `json:"stats,omitempty"`
}

type broadcastList struct {
	Broadcasts []broadcastJSON `json:"broadcasts"`
	HasMore    bool            `json:"has_more"`
	NextCursor *string         `json:"next_cursor"`
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func broadcastOut(b broadcasts.Broadcast) broadcastJSON {
	return broadcastJSON{ID: b.ID, Name: b.Name, Status: string(b.Status), From: b.From, ReplyTo: opt(b.ReplyTo), Subject: b.Subject,
		AudienceID: opt(b.AudienceID), SegmentID: opt(b.SegmentID), TopicID: opt(b.TopicID), TemplateID: opt(b.TemplateID),
		TemplateVersionID: opt(b.TemplateVersionID), UnsubscribeFooter: b.Footer,
		TrackOpens: b.TrackOpens, TrackClicks: b.TrackClicks, ScheduledAt: tsPtr(b.ScheduledAt), StartedAt: tsPtr(b.StartedAt),
		FinishedAt: tsPtr(b.FinishedAt), CancelledAt: tsPtr(b.CancelledAt), CreatedAt: ts(b.CreatedAt), UpdatedAt: ts(b.UpdatedAt)}
}

func problemsOut(ps []broadcasts.Problem) []problemJSON {
	out := make([]problemJSON, 0, len(ps))
	for _, p := range ps {
		out = append(out, problemJSON{Code: p.Code, Message: p.Message})
	}
	return out
}

func (h *handler) createBroadcast(w http.ResponseWriter, r *http.Request) error {
	var req broadcastRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.TemplateVersionID != nil && req.TemplateID == nil {
		return apierr.InvalidRequest("template_version_id needs template_id.")
	}
	if req.BroadcastID != nil {
		return apierr.InvalidRequest("Unknown field \"broadcast_id\".")
	}
	if err := req.segmentAudience(); err != nil {
		return err
	}
	send := req.Send != nil && *req.Send
	if req.ScheduledAt != nil && !send {
		return apierr.InvalidRequest("scheduled_at needs send: true.").WithNext("Or schedule later with POST /v1/broadcasts/{id}/send.")
	}
	var at *time.Time
	if req.ScheduledAt != nil {
		t, err := h.broadcastWhen(*req.ScheduledAt)
		if err != nil {
			return err
		}
		at = &t
	}
	ws := apiKey(r).WorkspaceID
	b, ps, err := h.d.Services.Broadcasts.Create(r.Context(), ws, req.input())
	if err != nil {
		return err
	}
	if send {
		res, err := h.d.Services.Broadcasts.Send(r.Context(), ws, b.ID, at)
		if err != nil {
			return err // the draft stays, under the id GET /v1/broadcasts lists
		}
		b = res.Broadcast
	}
	writeJSON(w, http.StatusCreated, broadcastCreated{ID: b.ID, Status: string(b.Status), Ready: len(ps) == 0, Problems: problemsOut(ps)})
	return nil
}

// broadcastWhen reads scheduled_at: RFC 3339 as the spec says, and beside
// it the phrases a send's send_at takes ("in 1 hour"), as the Resend SDKs
// pass them; what neither reads keeps the spec's message.
func (h *handler) broadcastWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := sending.ParseSendAt(s, h.d.Clock.Now()); err == nil {
		return t, nil
	}
	return time.Time{}, apierr.InvalidRequest("scheduled_at must be an RFC 3339 time such as 2026-12-01T09:00:00Z.")
}

// samePath refuses a broadcast_id in the body that is not the path's.
func samePath(r *http.Request, id *string) error {
	if id != nil && *id != r.PathValue("id") {
		return apierr.InvalidRequest("broadcast_id does not match the broadcast in the path.")
	}
	return nil
}

func (h *handler) listBroadcasts(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 50, 100, false)
	if err != nil {
		return err
	}
	var pos *broadcasts.Position
	if pg.After != nil {
		pos = &broadcasts.Position{At: pg.After.At, ID: pg.After.ID}
	}
	bs, err := h.d.Services.Broadcasts.List(r.Context(), apiKey(r).WorkspaceID, pg.Limit+1, pos)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(bs), func(i int) Cursor { return Cursor{At: bs[i].CreatedAt.UnixMilli(), ID: bs[i].ID} })
	out := make([]broadcastJSON, 0, n)
	for _, b := range bs[:n] {
		o, err := h.listedBroadcast(r, b)
		if err != nil {
			return err
		}
		out = append(out, o)
	}
	writeJSON(w, http.StatusOK, broadcastList{Broadcasts: out, HasMore: meta.HasMore, NextCursor: meta.NextCursor})
	return nil
}

// listedBroadcast is a list entry: no body or stats, and problems only
// where they can still stop a send (draft, scheduled); a sent one is ready.
func (h *handler) listedBroadcast(r *http.Request, b broadcasts.Broadcast) (broadcastJSON, error) {
	svc := h.d.Services.Broadcasts
	out := broadcastOut(b)
	out.Problems = []problemJSON{}
	if b.Status == broadcasts.StatusDraft || b.Status == broadcasts.StatusScheduled {
		ps, err := svc.Problems(r.Context(), b)
		if err != nil {
			return out, err
		}
		out.Problems = problemsOut(ps)
	}
	out.Ready = len(out.Problems) == 0
	if b.Status != broadcasts.StatusDraft {
		st, err := svc.Stats(r.Context(), b)
		if err != nil {
			return out, err
		}
		out.Recipients = st.Total
	}
	return out, nil
}

func (h *handler) fullBroadcast(r *http.Request, b broadcasts.Broadcast) (broadcastJSON, error) {
	svc := h.d.Services.Broadcasts
	ps, err := svc.Problems(r.Context(), b)
	if err != nil {
		return broadcastJSON{}, err
	}
	st, err := svc.Stats(r.Context(), b)
	if err != nil {
		return broadcastJSON{}, err
	}
	out := broadcastOut(b)
	out.HTML, out.Text, out.Ready, out.Problems = &b.HTML, &b.Text, len(ps) == 0, problemsOut(ps)
	out.Recipients = st.Total
	stats := statsOut(st)
	out.Stats = &stats
	return out, nil
}

func statsOut(st broadcasts.Stats) statsJSON {
	return statsJSON{Total: st.Total, Pending: st.Pending, Sent: st.Sent, Delivered: st.Delivered, Bounced: st.Bounced,
		Complained: st.Complained, Failed: st.Failed, Skipped: st.Skipped,
		engagementJSON: engagementJSON{Opens: st.Opens, UniqueOpens: st.UniqueOpens, Clicks: st.Clicks, UniqueClicks: st.UniqueClicks,
			MachineOpens: st.MachineOpens, MachineClicks: st.MachineClicks}}
}

func (h *handler) getBroadcast(w http.ResponseWriter, r *http.Request) error {
	b, err := h.d.Services.Broadcasts.Get(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out, err := h.fullBroadcast(r, b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) patchBroadcast(w http.ResponseWriter, r *http.Request) error {
	var req broadcastRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if err := samePath(r, req.BroadcastID); err != nil {
		return err
	}
	if req.Send != nil || req.ScheduledAt != nil {
		return apierr.InvalidRequest("send and scheduled_at are for create.").WithNext("Send a draft with POST /v1/broadcasts/{id}/send.")
	}
	if req.From != nil {
		return apierr.InvalidRequest("from cannot be changed.").WithNext("Create a new broadcast to send from another address.")
	}
	if err := req.segmentAudience(); err != nil {
		return err
	}
	b, _, err := h.d.Services.Broadcasts.Update(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), req.input())
	if err != nil {
		return err
	}
	out, err := h.fullBroadcast(r, b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type broadcastCancelled struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (h *handler) cancelBroadcast(w http.ResponseWriter, r *http.Request) error {
	b, err := h.d.Services.Broadcasts.Cancel(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, broadcastCancelled{ID: b.ID, Status: string(b.Status)})
	return nil
}

type sendBroadcastRequest struct {
	ScheduledAt *string `json:"scheduled_at"`
	BroadcastID *string `json:"broadcast_id"` // the Resend Go SDK repeats the path's id
}

type sendBroadcastJSON struct {
	ID          string  `json:"id"`
	Status      string  `json:"status"`
	Queued      *int    `json:"queued,omitempty"`
	Batches     *int    `json:"batches,omitempty"`
	Skipped     *int    `json:"skipped,omitempty"`
	Recipients  *int    `json:"recipients,omitempty"`
	ScheduledAt *string `json:"scheduled_at,omitempty"`
}

func (h *handler) sendBroadcast(w http.ResponseWriter, r *http.Request) error {
	var req sendBroadcastRequest
	if r.ContentLength != 0 {
		if err := decodeRequest(w, r, &req); err != nil {
			return err
		}
	}
	if err := samePath(r, req.BroadcastID); err != nil {
		return err
	}
	var at *time.Time
	if req.ScheduledAt != nil {
		t, err := h.broadcastWhen(*req.ScheduledAt)
		if err != nil {
			return err
		}
		at = &t
	}
	res, err := h.d.Services.Broadcasts.Send(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), at)
	if err != nil {
		return err
	}
	out := sendBroadcastJSON{ID: res.Broadcast.ID, Status: string(res.Broadcast.Status)}
	if at != nil {
		out.ScheduledAt = tsPtr(res.Broadcast.ScheduledAt)
	} else {
		out.Queued, out.Batches, out.Skipped, out.Recipients = &res.Queued, &res.Batches, &res.Skipped, &res.Recipients
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type testBroadcastRequest struct {
	To json.RawMessage `json:"to"`
}

type testBroadcastJSON struct {
	Sent    int      `json:"sent"`
	Skipped []string `json:"skipped"`
}

func (h *handler) testBroadcast(w http.ResponseWriter, r *http.Request) error {
	var req testBroadcastRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	var to []string
	var one string
	if len(req.To) > 0 && json.Unmarshal(req.To, &one) == nil {
		to = []string{one}
	} else if len(req.To) > 0 && json.Unmarshal(req.To, &to) != nil {
		return apierr.InvalidRequest("to is an address or a list of addresses.")
	}
	n, skipped, err := h.d.Services.Broadcasts.Test(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), to)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, testBroadcastJSON{Sent: n, Skipped: skipped})
	return nil
}

type broadcastPreview struct {
	ID                 *string           `json:"id"`
	Subject            string            `json:"subject"`
	HTML               string            `json:"html"`
	Text               string            `json:"text"`
	Headers            map[string]string `json:"headers,omitempty"`
	MergeFields        []string          `json:"merge_fields"`
	AudienceSampleSize int               `json:"audience_sample_size"`
}

func previewOut(p broadcasts.Rendered) broadcastPreview {
	return broadcastPreview{Subject: p.Subject, HTML: p.HTML, Text: p.Text, MergeFields: p.MergeFields, AudienceSampleSize: p.SampleSize}
}

func (h *handler) previewBroadcast(w http.ResponseWriter, r *http.Request) error {
	p, err := h.d.Services.Broadcasts.Preview(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), r.URL.Query().Get("email"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, previewOut(p))
	return nil
}

type broadcastPreflightJSON struct {
	Object    string                 `json:"object"` // "preflight"
	ID        string                 `json:"id"`
	WouldSend bool                   `json:"would_send"` // no problem stops it
	Problems  []problemJSON          `json:"problems"`
	Sample    string                 `json:"sample"` // the member the content was rendered for
	Content   []contentcheck.Finding `json:"content"`
}

type broadcastPreflightRequest struct {
	Email *string `json:"email"` // a member to render for; the first member when absent
}

func (h *handler) preflightBroadcast(w http.ResponseWriter, r *http.Request) error {
	var req broadcastPreflightRequest
	if err := decodeOptional(w, r, &req); err != nil {
		return err
	}
	email := ""
	if req.Email != nil {
		email = *req.Email
	}
	id := r.PathValue("id")
	p, err := h.d.Services.Broadcasts.Preflight(r.Context(), apiKey(r).WorkspaceID, id, email)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, broadcastPreflightJSON{Object: "preflight", ID: id, WouldSend: len(p.Problems) == 0,
		Problems: problemsOut(p.Problems), Sample: p.Sample, Content: p.Content})
	return nil
}

type previewDraftRequest struct {
	Subject    *string `json:"subject"`
	HTML       *string `json:"html"`
	Text       *string `json:"text"`
	From       *string `json:"from"`
	ReplyTo    *string `json:"replyTo"`
	AudienceID *string `json:"audienceId"`
	Email      *string `json:"email"`
}

func (h *handler) previewDraftBroadcast(w http.ResponseWriter, r *http.Request) error {
	var req previewDraftRequest
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Subject == nil || strings.TrimSpace(*req.Subject) == "" {
		return apierr.InvalidRequest("subject is required.")
	}
	if (req.HTML == nil || *req.HTML == "") && (req.Text == nil || *req.Text == "") {
		return apierr.InvalidRequest("html or text is required.")
	}
	p, err := h.d.Services.Broadcasts.PreviewDraft(r.Context(), apiKey(r).WorkspaceID, broadcasts.Input{
		From: req.From, Subject: req.Subject, HTML: req.HTML, Text: req.Text, ReplyTo: req.ReplyTo, AudienceID: req.AudienceID}, str(req.Email))
	if err != nil {
		return err
	}
	out := previewOut(p)
	out.Headers = p.Headers
	writeJSON(w, http.StatusOK, out)
	return nil
}

type recipientJSON struct {
	ID        string  `json:"id"`
	ContactID string  `json:"contact_id"`
	Email     string  `json:"email"`
	Status    string  `json:"status"`
	Reason    *string `json:"reason"`
	EmailID   *string `json:"email_id"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

type recipientList struct {
	Stats      statsJSON       `json:"stats"`
	Recipients []recipientJSON `json:"recipients"`
	HasMore    bool            `json:"has_more"`
	NextCursor *string         `json:"next_cursor"`
	NextAfter  *string         `json:"next_after"` // deprecated spelling of next_cursor
}

func (h *handler) listBroadcastRecipients(w http.ResponseWriter, r *http.Request) error {
	pg, err := h.pager.page(r, 100, 500, true)
	if err != nil {
		return err
	}
	after := ""
	if pg.After != nil {
		after = pg.After.ID
	}
	rs, st, err := h.d.Services.Broadcasts.Recipients(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"), r.URL.Query().Get("status"), pg.Limit+1, pg.Offset, after)
	if err != nil {
		return err
	}
	meta, n := h.pager.meta(pg, len(rs), func(i int) Cursor { return Cursor{ID: rs[i].ID} })
	out := make([]recipientJSON, 0, n)
	for _, x := range rs[:n] {
		out = append(out, recipientJSON{ID: x.ID, ContactID: x.ContactID, Email: x.Email, Status: x.Status, Reason: opt(x.Reason),
			EmailID: opt(x.EmailID), CreatedAt: ts(x.CreatedAt), UpdatedAt: ts(x.UpdatedAt)})
	}
	writeJSON(w, http.StatusOK, recipientList{Recipients: out, HasMore: meta.HasMore, NextCursor: meta.NextCursor, NextAfter: meta.NextCursor,
		Stats: statsOut(st)})
	return nil
}

// duplicateBroadcast copies a broadcast as a new draft (the Resend SDKs'
// broadcasts.duplicate).
func (h *handler) duplicateBroadcast(w http.ResponseWriter, r *http.Request) error {
	b, err := h.d.Services.Broadcasts.Duplicate(r.Context(), apiKey(r).WorkspaceID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, copiedJSON{Object: "broadcast", ID: b.ID, Name: b.Name})
	return nil
}

// clickedLinksJSON is GET /v1/broadcasts/{id}/clicked-links (the Resend
// SDKs' broadcasts.clickedLinks): the URLs people clicked, most first.
type clickedLinksJSON struct {
	Object  string            `json:"object"`
	HasMore bool              `json:"has_more"`
	Data    []clickedLinkJSON `json:"data"`
}

type clickedLinkJSON struct {
	ID           string `json:"id"` // a cursor for this row: after=<id> reads on below it
	URL          string `json:"url"`
	Clicks       int64  `json:"clicks"`
	UniqueClicks int64  `json:"unique_clicks"`
}

// clickedLinksMax bounds one page (Resend's pages are at most 100 rows).
const clickedLinksMax = 100

func (h *handler) listBroadcastClickedLinks(w http.ResponseWriter, r *http.Request) error {
	ws := apiKey(r).WorkspaceID
	b, err := h.d.Services.Broadcasts.Get(r.Context(), ws, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > clickedLinksMax {
			return apierr.InvalidRequest("limit must be a whole number from 1 to %d.", clickedLinksMax)
		}
	}
	offset := 0
	if v := q.Get("after"); v != "" {
		n, ok := strings.CutPrefix(v, "lnk_")
		if offset, err = strconv.Atoi(n); !ok || err != nil || offset < 0 {
			return apierr.InvalidRequest("after must be the id of a row of this list.")
		}
		offset++
	}
	links, err := h.d.Services.Tracking.ClickedLinks(r.Context(), ws, b.ID, limit+1, offset)
	if err != nil {
		return err
	}
	out := clickedLinksJSON{Object: "list", HasMore: len(links) > limit, Data: []clickedLinkJSON{}}
	for i, l := range links[:min(len(links), limit)] {
		out.Data = append(out.Data, clickedLinkJSON{ID: "lnk_" + strconv.Itoa(offset+i), URL: l.URL, Clicks: l.Clicks, UniqueClicks: l.UniqueClicks})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
