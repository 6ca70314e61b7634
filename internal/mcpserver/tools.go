package mcpserver

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTools registers every tool; each is one or two API calls, named in
// its description, so an agent's refusal reads like an API client's.
func addTools(s *mcp.Server, c *client) {
	t := tools{c}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	sends := &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)} // adds mail, to the world outside
	mcp.AddTool(s, &mcp.Tool{Name: "send_email", Description: "Send an email (POST /v1/emails), now or at scheduled_at, or only check it with dry_run. Needs mail:send; a key bound to a mailbox sends only as that mailbox.",
		Annotations: sends}, t.sendEmail)
	mcp.AddTool(s, &mcp.Tool{Name: "get_email", Description: "Read a sent email with its status and its events (GET /v1/emails/{id}).", Annotations: ro}, t.getEmail)
	mcp.AddTool(s, &mcp.Tool{Name: "list_emails", Description: "List sent emails, newest first, with their events (GET /v1/emails); pass next_cursor back as cursor for the next page.", Annotations: ro}, t.listEmails)
	mcp.AddTool(s, &mcp.Tool{Name: "search_received", Description: "Find mail in the mailboxes: with query, a full-text search ranked by relevance (GET /v1/search, answer: hits); " +
		"without, the newest messages first (GET /v1/messages, answer: messages). Needs mail:read.", Annotations: ro}, t.searchReceived)
	mcp.AddTool(s, &mcp.Tool{Name: "read_received", Description: "Read one message of a mailbox in full: text, html, headers, attachments, authentication (GET /v1/messages/{id}); marks it read.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false)}}, t.readReceived)
	mcp.AddTool(s, &mcp.Tool{Name: "list_threads", Description: "List conversations, latest activity first (GET /v1/threads). Needs mail:read.", Annotations: ro}, t.listThreads)
	mcp.AddTool(s, &mcp.Tool{Name: "read_thread", Description: "Read a conversation with all its messages, oldest first (GET /v1/threads/{id}).", Annotations: ro}, t.readThread)
	mcp.AddTool(s, &mcp.Tool{Name: "reply", Description: "Reply to a message of a mailbox, from that mailbox, threaded (In-Reply-To, References): to its sender, or with reply_all to everyone on it " +
		"(POST /v1/inboxes/{mailbox}/threads/{thread}/emails/{id}/reply). Needs mail:send and mail:read.",
		Annotations: sends}, t.reply)
	mcp.AddTool(s, &mcp.Tool{Name: "forward", Description: "Forward a message of a mailbox from that mailbox, quoted inline or attached whole as .eml with mode wrapped (POST /v1/messages/{id}/forward). " +
		"Needs mail:send and mail:read.", Annotations: sends}, t.forward)
	mcp.AddTool(s, &mcp.Tool{Name: "list_suppressions", Description: "List the addresses the workspace will not send to, and why (GET /v1/suppressions). Needs the workspace scope.", Annotations: ro}, t.listSuppressions)
}

func ptr[T any](v T) *T { return &v }

type tools struct{ c *client }

// get answers GET format, its %s filled with id.
func (t tools) get(ctx context.Context, format, id string) (*mcp.CallToolResult, any, error) {
	p, err := route(format, id)
	if err != nil {
		return nil, nil, err
	}
	return answer(t.c.call(ctx, "GET", p, nil, nil))
}

// page is the paging every list tool takes.
type page struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"how many to return (the API's default when left out; it refuses more than its maximum)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page, to read on"`
}

func (p page) query() url.Values {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// SendEmailInput is send_email's arguments: the send request's common fields.
type SendEmailInput struct {
	From           string   `json:"from" jsonschema:"the sender, an address on a verified domain or a mailbox, optionally with a name: Acme <news@acme.example>"`
	To             []string `json:"to" jsonschema:"the recipients' addresses"`
	Subject        string   `json:"subject"`
	HTML           string   `json:"html,omitempty" jsonschema:"the HTML body; give html, text or both"`
	Text           string   `json:"text,omitempty" jsonschema:"the plain-text body"`
	Cc             []string `json:"cc,omitempty"`
	Bcc            []string `json:"bcc,omitempty"`
	ReplyTo        []string `json:"reply_to,omitempty"`
	ScheduledAt    string   `json:"scheduled_at,omitempty" jsonschema:"send later: an RFC 3339 time or words such as 'in 10 min' or 'tomorrow 9am'; left out, it is sent now"`
	IdempotencyKey string   `json:"idempotency_key,omitempty" jsonschema:"the same key with the same request within 24 hours sends once"`
	DryRun         bool     `json:"dry_run,omitempty" jsonschema:"check everything but send: the answer is a preflight report (verdicts, the signed headers, content checks); nothing is sent or counted"`
}

func (t tools) sendEmail(ctx context.Context, _ *mcp.CallToolRequest, in SendEmailInput) (*mcp.CallToolResult, any, error) {
	body := map[string]any{"from": in.From, "to": in.To, "subject": in.Subject}
	for k, v := range map[string]string{"html": in.HTML, "text": in.Text, "send_at": in.ScheduledAt, "idempotency_key": in.IdempotencyKey} {
		if v != "" {
			body[k] = v
		}
	}
	for k, v := range map[string][]string{"cc": in.Cc, "bcc": in.Bcc, "reply_to": in.ReplyTo} {
		if len(v) > 0 {
			body[k] = v
		}
	}
	if in.DryRun {
		body["dry_run"] = true
	}
	return answer(t.c.call(ctx, "POST", "/v1/emails", nil, body))
}

// IDInput names one thing by its id.
type IDInput struct {
	ID string `json:"id" jsonschema:"the id, as a list or an earlier tool gave it"`
}

func (t tools) getEmail(ctx context.Context, _ *mcp.CallToolRequest, in IDInput) (*mcp.CallToolResult, any, error) {
	return t.get(ctx, "/v1/emails/%s", in.ID)
}

// ListEmailsInput is list_emails' arguments.
type ListEmailsInput struct {
	page
}

func (t tools) listEmails(ctx context.Context, _ *mcp.CallToolRequest, in ListEmailsInput) (*mcp.CallToolResult, any, error) {
	return answer(t.c.call(ctx, "GET", "/v1/emails", in.query(), nil))
}

// SearchReceivedInput is search_received's arguments.
type SearchReceivedInput struct {
	Query           string `json:"query,omitempty" jsonschema:"words to search subjects, senders and bodies for; left out, the newest messages are listed"`
	MailboxID       string `json:"mailbox_id,omitempty" jsonschema:"only this mailbox (a key bound to a mailbox sees only its own)"`
	UnreadOnly      bool   `json:"unread_only,omitempty" jsonschema:"only unread messages (listing only)"`
	IncludeArchived bool   `json:"include_archived,omitempty" jsonschema:"archived messages too (listing only)"`
	page
}

func (t tools) searchReceived(ctx context.Context, _ *mcp.CallToolRequest, in SearchReceivedInput) (*mcp.CallToolResult, any, error) {
	q := in.query()
	if in.MailboxID != "" {
		q.Set("mailbox_id", in.MailboxID)
	}
	if in.Query != "" {
		q.Set("q", in.Query)
		return answer(t.c.call(ctx, "GET", "/v1/search", q, nil))
	}
	if in.UnreadOnly {
		q.Set("unread_only", "true")
	}
	if in.IncludeArchived {
		q.Set("include_archived", "true")
	}
	return answer(t.c.call(ctx, "GET", "/v1/messages", q, nil))
}

func (t tools) readReceived(ctx context.Context, _ *mcp.CallToolRequest, in IDInput) (*mcp.CallToolResult, any, error) {
	return t.get(ctx, "/v1/messages/%s", in.ID)
}

// ListThreadsInput is list_threads' arguments.
type ListThreadsInput struct {
	MailboxID string `json:"mailbox_id,omitempty" jsonschema:"only this mailbox's threads"`
	page
}

func (t tools) listThreads(ctx context.Context, _ *mcp.CallToolRequest, in ListThreadsInput) (*mcp.CallToolResult, any, error) {
	q := in.query()
	if in.MailboxID != "" {
		q.Set("mailbox_id", in.MailboxID)
	}
	return answer(t.c.call(ctx, "GET", "/v1/threads", q, nil))
}

func (t tools) readThread(ctx context.Context, _ *mcp.CallToolRequest, in IDInput) (*mcp.CallToolResult, any, error) {
	return t.get(ctx, "/v1/threads/%s", in.ID)
}

// ReplyInput is reply's arguments.
type ReplyInput struct {
	MessageID string   `json:"message_id" jsonschema:"the message answered (msg_...)"`
	Text      string   `json:"text" jsonschema:"the reply, as text or markdown; Mailroom renders the html"`
	ReplyAll  bool     `json:"reply_all,omitempty" jsonschema:"answer everyone on the message, not only its sender (then leave out cc and subject)"`
	Cc        []string `json:"cc,omitempty"`
	Subject   string   `json:"subject,omitempty" jsonschema:"left out: Re: and the message's subject"`
}

func (t tools) reply(ctx context.Context, _ *mcp.CallToolRequest, in ReplyInput) (*mcp.CallToolResult, any, error) {
	// The reply route names the message's mailbox and thread; reading the
	// message first finds them, under the same key.
	p, err := route("/v1/messages/%s", in.MessageID)
	if err != nil {
		return nil, nil, err
	}
	raw, err := t.c.call(ctx, "GET", p, nil, nil)
	if err != nil {
		return answer(nil, err)
	}
	var m struct {
		Mailbox  string `json:"mailbox"`
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, err
	}
	body := map[string]any{"text": in.Text}
	if in.ReplyAll {
		body["reply_all"] = true
	}
	if len(in.Cc) > 0 {
		body["cc"] = in.Cc
	}
	if in.Subject != "" {
		body["subject"] = in.Subject
	}
	if p, err = route("/v1/inboxes/%s/threads/%s/emails/%s/reply", m.Mailbox, m.ThreadID, in.MessageID); err != nil {
		return nil, nil, err
	}
	return answer(t.c.call(ctx, "POST", p, nil, body))
}

// ForwardInput is forward's arguments.
type ForwardInput struct {
	MessageID string   `json:"message_id" jsonschema:"the message forwarded (msg_...)"`
	To        []string `json:"to" jsonschema:"the recipients' addresses"`
	Text      string   `json:"text,omitempty" jsonschema:"a note above the forwarded message, as text or markdown"`
	Mode      string   `json:"mode,omitempty" jsonschema:"inline (the default) quotes the message; wrapped attaches it whole as message/rfc822"`
}

func (t tools) forward(ctx context.Context, _ *mcp.CallToolRequest, in ForwardInput) (*mcp.CallToolResult, any, error) {
	body := map[string]any{"to": in.To, "body": in.Text}
	if in.Mode != "" {
		body["mode"] = in.Mode
	}
	p, err := route("/v1/messages/%s/forward", in.MessageID)
	if err != nil {
		return nil, nil, err
	}
	return answer(t.c.call(ctx, "POST", p, nil, body))
}

// ListSuppressionsInput is list_suppressions' arguments.
type ListSuppressionsInput struct {
	Email  string `json:"email,omitempty" jsonschema:"only this address"`
	Reason string `json:"reason,omitempty" jsonschema:"only this reason: bounce, complaint, unsub or manual"`
	page
}

func (t tools) listSuppressions(ctx context.Context, _ *mcp.CallToolRequest, in ListSuppressionsInput) (*mcp.CallToolResult, any, error) {
	q := in.query()
	if in.Email != "" {
		q.Set("email", in.Email)
	}
	if in.Reason != "" {
		q.Set("reason", in.Reason)
	}
	return answer(t.c.call(ctx, "GET", "/v1/suppressions", q, nil))
}
