package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/resend/resend-go/v2"

	"mailroom/internal/testkit/testapp"
)

// sdkClient is the official Resend Go SDK pointed at the node: one URL
// changed, nothing else.
func sdkClient(t *testing.T, a *testapp.App, key string) *resend.Client {
	t.Helper()
	c := resend.NewCustomClient(&http.Client{Timeout: 30 * time.Second}, key)
	u, err := url.Parse(a.URL + "/v1/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

// TestResendGoSDK: the Resend Go SDK, which no one here wrote, sends (with
// idempotency, tags, attachments, scheduling), batches, gets, lists,
// updates, cancels, and manages domains and API keys; its errors carry the
// real cause.
func TestResendGoSDK(t *testing.T) {
	a := testapp.Start(t)
	c := sdkClient(t, a, a.Key)
	ctx := context.Background()

	req := &resend.SendEmailRequest{
		From: sandboxFrom, To: []string{deliveredTo}, Subject: "From the SDK", Text: "Hello",
		Tags:        []resend.Tag{{Name: "campaign", Value: "sdk"}},
		Attachments: []*resend.Attachment{{Filename: "note.txt", Content: []byte("hello"), ContentType: "text/plain"}},
	}
	sent, err := c.Emails.SendWithOptions(ctx, req, &resend.SendEmailOptions{IdempotencyKey: "sdk-1"})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	again, err := c.Emails.SendWithOptions(ctx, req, &resend.SendEmailOptions{IdempotencyKey: "sdk-1"})
	if err != nil || again.Id != sent.Id {
		t.Fatalf("idempotent retry: %v, %v want %s", err, again, sent.Id)
	}
	got, err := c.Emails.Get(sent.Id)
	if err != nil || got.Id != sent.Id || got.Subject != "From the SDK" || got.To[0] != deliveredTo || got.Text != "Hello" {
		t.Fatalf("get: %v %+v", err, got)
	}
	list, err := c.Emails.List()
	if err != nil || len(list.Data) != 1 || list.Data[0].Id != sent.Id {
		t.Fatalf("list: %v %+v", err, list)
	}

	scheduled := *req
	scheduled.Attachments, scheduled.ScheduledAt = nil, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	s, err := c.Emails.Send(&scheduled)
	if err != nil {
		t.Fatalf("scheduled send: %v", err)
	}
	if _, err := c.Emails.Update(&resend.UpdateEmailRequest{Id: s.Id, ScheduledAt: time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if cr, err := c.Emails.Cancel(s.Id); err != nil || cr.Id != s.Id {
		t.Fatalf("cancel: %v %+v", err, cr)
	}

	batch, err := c.Batch.SendWithOptions(ctx, []*resend.SendEmailRequest{req, req}, &resend.BatchSendEmailOptions{IdempotencyKey: "sdk-batch"})
	if err != nil || len(batch.Data) != 2 || batch.Data[0].Id == "" || batch.Data[0].Id == batch.Data[1].Id {
		t.Fatalf("batch: %v %+v", err, batch)
	}

	d, err := c.Domains.Create(&resend.CreateDomainRequest{Name: "sdk-domain.example"})
	if err != nil || d.Id == "" || d.Name != "sdk-domain.example" {
		t.Fatalf("domain create: %v %+v", err, d)
	}
	ds, err := c.Domains.List()
	if err != nil || len(ds.Data) != 2 || ds.Data[1].Id != d.Id { // the workspace's own domain first
		t.Fatalf("domain list: %v %+v", err, ds)
	}
	if gd, err := c.Domains.Get(d.Id); err != nil || gd.Id != d.Id {
		t.Fatalf("domain get: %v %+v", err, gd)
	}
	if ok, err := c.Domains.Remove(d.Id); err != nil || !ok {
		t.Fatalf("domain remove: %v", err)
	}

	k, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: "sdk key", Permission: "sending_access"})
	if err != nil || k.Id == "" || k.Token == "" {
		t.Fatalf("key create: %v %+v", err, k)
	}
	ks, err := c.ApiKeys.List()
	if err != nil || len(ks.Data) != 2 {
		t.Fatalf("key list: %v %+v", err, ks)
	}
	// The new sending key sends; its error for a bad request names the cause.
	sk := sdkClient(t, a, k.Token)
	if _, err := sk.Emails.Send(req); err != nil {
		t.Fatalf("send with the created key: %v", err)
	}
	bad := *req
	bad.From = ""
	if _, err := sk.Emails.Send(&bad); err == nil || !strings.Contains(err.Error(), "from") {
		t.Fatalf("error for a missing from: %v", err)
	}
	// Webhooks: created through the SDK, and a delivery (Svix-style
	// headers on every one) verified by the SDK's own Verify.
	hooks := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- r
		bodies <- string(b)
	}))
	defer recv.Close()
	wh, err := c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: recv.URL, Events: []string{"email.delivered"}})
	if err != nil || wh.Id == "" || !strings.HasPrefix(wh.SigningSecret, "whsec_") {
		t.Fatalf("webhook create: %v %+v", err, wh)
	}
	if r := a.Do("GET", "/v1/webhooks/"+wh.Id, nil); r.JSON()["svix_signatures"] != true {
		t.Fatalf("svix signatures are on for every endpoint: %s", r.Body)
	}
	if r := a.Do("POST", "/v1/webhooks/deliveries", map[string]any{"webhook_id": wh.Id}); r.Status >= 300 {
		t.Fatalf("test delivery: %d %s", r.Status, r.Body)
	}
	hr, body := <-hooks, <-bodies
	if hr.Header.Get("X-Svc-Signature") == "" || hr.Header.Get("Webhook-Signature") != hr.Header.Get("Svix-Signature") {
		t.Fatalf("headers %v", hr.Header)
	}
	for _, spelling := range []string{"Svix", "Webhook"} {
		err := c.Webhooks.Verify(&resend.VerifyWebhookOptions{Payload: body, WebhookSecret: wh.SigningSecret, Headers: resend.WebhookHeaders{
			Id: hr.Header.Get(spelling + "-Id"), Timestamp: hr.Header.Get(spelling + "-Timestamp"), Signature: hr.Header.Get(spelling + "-Signature")}})
		if err != nil {
			t.Fatalf("SDK verify (%s-*): %v", spelling, err)
		}
	}

	if ok, err := c.ApiKeys.Remove(k.Id); err != nil || !ok {
		t.Fatalf("key remove: %v", err)
	}
	_, err = sk.Emails.Send(req)
	if err == nil || errors.Is(err, resend.ErrRateLimit) || !strings.Contains(strings.ToLower(err.Error()), "key") {
		t.Fatalf("revoked key: %v", err)
	}
}
