package resendcompat_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/resend/resend-go/v3"

	"mailroom/internal/testkit/testapp"
)

// goCall is one call of the Resend Go SDK: its name (Service.Method) and
// what it does, returning an error when the call or the answer's shape
// fails.
type goCall struct {
	name string
	run  func() error
}

// expect turns a false shape check into an error carrying the answer.
func expect(ok bool, what string, v any) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%s: got %+v", what, v)
}

// TestGoSDK calls every method of the Resend Go SDK (the v3 pinned in
// go.mod) against a real node, one subtest per call; goUnsupported lists
// those that must fail, with why. A method of the SDK with no call here
// fails the test, so a newer SDK cannot add one unnoticed.
func TestGoSDK(t *testing.T) {
	a := startWithMail(t)
	c := resend.NewCustomClient(&http.Client{Timeout: 30 * time.Second}, a.Key)
	u, err := url.Parse(a.URL + "/v1/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	from, to := "onboarding@mailroom.test", "delivered@mailroom.test"
	uniq := fmt.Sprint(time.Now().UnixNano())
	var attEmailID, attID string
	var emailID, scheduledID, domainID, keyID, segmentID, audienceID, topicID, propertyID, tierID, contactID, contactEmail,
		templateID, broadcastID, suppressionID, webhookID, receivedID string
	str := func(s string) *string { return &s }

	calls := []goCall{
		{"Emails.Send", func() error {
			r, err := c.Emails.Send(&resend.SendEmailRequest{From: from, To: []string{to}, Subject: "every call", Text: "x"})
			if err != nil {
				return err
			}
			emailID = r.Id
			s, err := c.Emails.Send(&resend.SendEmailRequest{From: from, To: []string{to}, Subject: "later", Text: "x", ScheduledAt: "in 1 hour"})
			if err != nil {
				return err
			}
			scheduledID = s.Id
			return expect(emailID != "" && scheduledID != "", "ids", r)
		}},
		{"Emails.Get", func() error {
			r, err := c.Emails.Get(emailID)
			if err != nil {
				return err
			}
			return expect(r.Id == emailID && r.Object == "email", "the email with object", r)
		}},
		{"Emails.List", func() error {
			r, err := c.Emails.List()
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Emails.Update", func() error {
			_, err := c.Emails.Update(&resend.UpdateEmailRequest{Id: scheduledID, ScheduledAt: time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)})
			return err
		}},
		{"Emails.Cancel", func() error {
			r, err := c.Emails.Cancel(scheduledID)
			if err != nil {
				return err
			}
			return expect(r.Id == scheduledID, "id", r)
		}},
		{"Emails.ListAttachments", func() error {
			sent, err := c.Emails.Send(&resend.SendEmailRequest{From: from, To: []string{to}, Subject: "with a file", Text: "x",
				Attachments: []*resend.Attachment{{Filename: "note.txt", Content: []byte("note")}}})
			if err != nil {
				return err
			}
			attEmailID = sent.Id
			r, err := c.Emails.ListAttachments(attEmailID)
			if err != nil {
				return err
			}
			if len(r.Data) == 1 {
				attID = r.Data[0].Id
			}
			return expect(len(r.Data) == 1 && r.Data[0].Filename == "note.txt" && r.Data[0].DownloadUrl != "", "one attachment", r)
		}},
		{"Emails.GetAttachment", func() error {
			r, err := c.Emails.GetAttachment(attEmailID, attID)
			if err != nil {
				return err
			}
			if err := expect(r.Object == "attachment" && r.Filename == "note.txt", "the attachment", r); err != nil {
				return err
			}
			// download_url is under the node's public URL; fetch it here, with the key.
			req, _ := http.NewRequest("GET", a.URL+strings.TrimPrefix(r.DownloadUrl, a.Config.PublicURL), nil)
			req.Header.Set("Authorization", "Bearer "+a.Key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return expect(res.StatusCode == 200 && string(b) == "note", "the bytes at download_url", string(b))
		}},
		{"Emails.Receiving.List", func() error {
			r, err := c.Emails.Receiving.List()
			if err != nil {
				return err
			}
			if len(r.Data) > 0 {
				receivedID = r.Data[0].Id
			}
			return expect(len(r.Data) == 1 && r.Data[0].Subject == "Received" && len(r.Data[0].Attachments) == 1, "the received message", r)
		}},
		{"Emails.Receiving.Get", func() error {
			r, err := c.Emails.Receiving.Get(receivedID)
			if err != nil {
				return err
			}
			return expect(r.Id == receivedID && r.Object == "email" && strings.Contains(r.Text, "hello"), "the message", r)
		}},
		{"Emails.Receiving.ListAttachments", func() error {
			r, err := c.Emails.Receiving.ListAttachments(receivedID)
			if err != nil {
				return err
			}
			return expect(len(r.Data) == 1 && r.Data[0].Filename == "note.txt" && r.Data[0].DownloadUrl != "", "one attachment", r)
		}},
		{"Emails.Receiving.GetAttachment", func() error {
			r, err := c.Emails.Receiving.GetAttachment(receivedID, "note.txt")
			if err != nil {
				return err
			}
			return expect(r.Filename == "note.txt" && r.DownloadUrl != "", "the attachment", r)
		}},
		{"Batch.Send", func() error {
			r, err := c.Batch.Send([]*resend.SendEmailRequest{{From: from, To: []string{to}, Subject: "b1", Text: "x"}, {From: from, To: []string{to}, Subject: "b2", Text: "y"}})
			if err != nil {
				return err
			}
			return expect(len(r.Data) == 2, "two ids", r)
		}},

		{"Domains.Create", func() error {
			r, err := c.Domains.Create(&resend.CreateDomainRequest{Name: "go-" + uniq + ".example"})
			domainID = r.Id
			return err
		}},
		{"Domains.List", func() error {
			r, err := c.Domains.List()
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Domains.Get", func() error {
			r, err := c.Domains.Get(domainID)
			if err != nil {
				return err
			}
			return expect(r.Id == domainID, "the domain", r)
		}},
		{"Domains.Update", func() error {
			_, err := c.Domains.Update(domainID, &resend.UpdateDomainRequest{OpenTracking: true})
			return err
		}},
		{"Domains.Verify", func() error { _, err := c.Domains.Verify(domainID); return err }},

		{"ApiKeys.Create", func() error {
			r, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: "go", Permission: "sending_access"})
			keyID = r.Id
			if err != nil {
				return err
			}
			return expect(r.Token != "", "token", r)
		}},
		{"ApiKeys.Create{DomainId}", func() error {
			_, err := c.ApiKeys.Create(&resend.CreateApiKeyRequest{Name: "go-domain", Permission: "sending_access", DomainId: domainID})
			return err
		}},
		{"ApiKeys.List", func() error {
			r, err := c.ApiKeys.List()
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 2, "data[]", r)
		}},
		{"ApiKeys.Remove", func() error { _, err := c.ApiKeys.Remove(keyID); return err }},

		{"Segments.Create", func() error {
			r, err := c.Segments.Create(&resend.CreateSegmentRequest{Name: "seg-" + uniq})
			segmentID = r.Id
			return err
		}},
		{"Segments.List", func() error {
			r, err := c.Segments.List()
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Segments.Get", func() error {
			r, err := c.Segments.Get(segmentID)
			if err != nil {
				return err
			}
			return expect(r.Id == segmentID, "the segment", r)
		}},
		{"Audiences.Create", func() error {
			r, err := c.Audiences.Create(&resend.CreateAudienceRequest{Name: "aud-" + uniq})
			audienceID = r.Id
			return err
		}},
		{"Audiences.List", func() error {
			r, err := c.Audiences.List()
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Audiences.Get", func() error {
			r, err := c.Audiences.Get(audienceID)
			if err != nil {
				return err
			}
			return expect(r.Id == audienceID, "the audience", r)
		}},

		{"Topics.Create", func() error {
			r, err := c.Topics.Create(&resend.CreateTopicRequest{Name: "topic-" + uniq, DefaultSubscription: resend.DefaultSubscriptionOptIn})
			if err != nil {
				return err
			}
			topicID = r.Id
			return nil
		}},
		{"Topics.List", func() error {
			r, err := c.Topics.List(nil)
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Topics.Get", func() error { _, err := c.Topics.Get(topicID); return err }},
		{"Topics.Update", func() error {
			_, err := c.Topics.Update(topicID, &resend.UpdateTopicRequest{Name: "topic2-" + uniq})
			return err
		}},

		{"ContactProperties.Create", func() error {
			r, err := c.ContactProperties.Create(&resend.CreateContactPropertyRequest{Key: "plan", Type: "string", FallbackValue: "free"})
			propertyID = r.Id
			if err != nil {
				return err
			}
			return expect(r.Id != "" && r.Object == "contact_property", "id and object", r)
		}},
		{"ContactProperties.List", func() error {
			r, err := c.ContactProperties.List()
			if err != nil {
				return err
			}
			return expect(len(r.Data) == 1 && r.Data[0].Id == propertyID && r.Data[0].FallbackValue == "free", "the property in data[]", r)
		}},
		{"ContactProperties.Get", func() error {
			r, err := c.ContactProperties.Get(propertyID)
			if err != nil {
				return err
			}
			return expect(r.Key == "plan" && r.Type == "string" && r.Object == "contact_property", "the property", r)
		}},
		{"ContactProperties.Update", func() error {
			_, err := c.ContactProperties.Update(&resend.UpdateContactPropertyRequest{Id: propertyID, FallbackValue: "pro"})
			return err
		}},

		{"Contacts.Create", func() error {
			contactEmail = "ann-" + uniq + "@example.com"
			r, err := c.Contacts.Create(&resend.CreateContactRequest{Email: contactEmail, FirstName: "Ann"})
			contactID = r.Id
			return err
		}},
		{"Contacts.List", func() error {
			r, err := c.Contacts.List(nil)
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Contacts.Get", func() error {
			r, err := c.Contacts.Get(&resend.GetContactOptions{Id: contactID})
			if err != nil {
				return err
			}
			return expect(r.Id == contactID, "the contact", r)
		}},
		{"Contacts.Get{email}", func() error {
			r, err := c.Contacts.Get(&resend.GetContactOptions{Id: contactEmail})
			if err != nil {
				return err
			}
			return expect(r.Id == contactID, "the contact", r)
		}},
		{"Contacts.Update", func() error {
			_, err := c.Contacts.Update(&resend.UpdateContactRequest{Id: contactID, LastName: "Lee"})
			return err
		}},
		{"Contacts.Segments.Add", func() error {
			_, err := c.Contacts.Segments.Add(&resend.AddContactSegmentRequest{ContactId: contactID, SegmentId: segmentID})
			return err
		}},
		{"Contacts.Segments.List", func() error {
			r, err := c.Contacts.Segments.List(&resend.ListContactSegmentsRequest{ContactId: contactID})
			if err != nil {
				return err
			}
			for _, sg := range r.Data {
				if sg.Id == segmentID {
					return nil
				}
			}
			return fmt.Errorf("segment %s (no rules: everyone) not listed: %+v", segmentID, r)
		}},
		{"Contacts.Segments.Remove", func() error {
			_, err := c.Contacts.Segments.Remove(&resend.RemoveContactSegmentRequest{ContactId: contactID, SegmentId: segmentID})
			return err
		}},
		{"Contacts.Topics.Update", func() error {
			_, err := c.Contacts.Topics.Update(&resend.UpdateContactTopicsRequest{Id: contactID, Topics: []resend.TopicSubscriptionUpdate{{Id: topicID, Subscription: "opt_out"}}})
			return err
		}},
		{"Contacts.Topics.List", func() error {
			r, err := c.Contacts.Topics.List(contactID)
			if err != nil {
				return err
			}
			for _, tp := range r.Data {
				if tp.Id == topicID {
					return expect(tp.Subscription == "opt_out", "the topic switched off", r)
				}
			}
			return fmt.Errorf("topic %s not listed: %+v", topicID, r)
		}},
		{"Contacts.Properties.Create", func() error {
			r, err := c.Contacts.Properties.Create(&resend.CreateContactPropertyRequest{Key: "tier", Type: "number", FallbackValue: 1})
			tierID = r.Id
			return err
		}},
		{"Contacts.Properties.List", func() error { _, err := c.Contacts.Properties.List(); return err }},
		{"Contacts.Properties.Get", func() error { _, err := c.Contacts.Properties.Get(propertyID); return err }},
		{"Contacts.Properties.Update", func() error {
			_, err := c.Contacts.Properties.Update(&resend.UpdateContactPropertyRequest{Id: propertyID, FallbackValue: "x"})
			return err
		}},
		{"Contacts.Properties.Remove", func() error {
			r, err := c.Contacts.Properties.Remove(tierID)
			if err != nil {
				return err
			}
			return expect(r.Deleted && r.Id == tierID, "deleted", r)
		}},
		{"Contacts.Remove", func() error {
			_, err := c.Contacts.Remove(&resend.RemoveContactOptions{Id: contactID})
			return err
		}},

		{"Templates.Create", func() error {
			r, err := c.Templates.Create(&resend.CreateTemplateRequest{Name: "tpl-" + uniq, Html: "<p>Hello</p>"})
			if err != nil {
				return err
			}
			templateID = r.Id
			return nil
		}},
		{"Templates.Create{variables}", func() error {
			_, err := c.Templates.Create(&resend.CreateTemplateRequest{Name: "tplv-" + uniq, Subject: "Hi {{{NAME}}}", Html: "<p>Hi {{{NAME}}}</p>",
				Variables: []*resend.TemplateVariable{{Key: "NAME", Type: resend.VariableTypeString, FallbackValue: "there"}}})
			return err
		}},
		{"Templates.List", func() error {
			r, err := c.Templates.List(nil)
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Templates.Get", func() error { _, err := c.Templates.Get(templateID); return err }},
		{"Templates.Update", func() error {
			_, err := c.Templates.Update(templateID, &resend.UpdateTemplateRequest{Name: "tpl2-" + uniq, Subject: "New", Html: "<p>New</p>"})
			return err
		}},
		{"Templates.Publish", func() error { _, err := c.Templates.Publish(templateID); return err }},
		{"Templates.Duplicate", func() error {
			r, err := c.Templates.Duplicate(templateID)
			if err != nil {
				return err
			}
			got, err := c.Templates.Get(r.Id)
			if err != nil {
				return err
			}
			return expect(r.Object == "template" && r.Id != templateID && got.Name == "tpl-"+uniq+" (copy)", "a draft copy", got)
		}},
		{"Templates.Remove", func() error { _, err := c.Templates.Remove(templateID); return err }},

		{"Broadcasts.Create", func() error {
			r, err := c.Broadcasts.Create(&resend.CreateBroadcastRequest{SegmentId: segmentID, From: from, Subject: "News", Html: "<p>News</p>"})
			broadcastID = r.Id
			return err
		}},
		{"Broadcasts.Create{Send}", func() error {
			_, err := c.Broadcasts.Create(&resend.CreateBroadcastRequest{SegmentId: segmentID, From: from, Subject: "Now", Text: "x", Send: true})
			return err
		}},
		{"Broadcasts.List", func() error {
			r, err := c.Broadcasts.List()
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Broadcasts.Get", func() error { _, err := c.Broadcasts.Get(broadcastID); return err }},
		{"Broadcasts.Update", func() error {
			_, err := c.Broadcasts.Update(&resend.UpdateBroadcastRequest{BroadcastId: broadcastID, Subject: "News 2"})
			return err
		}},
		{"Broadcasts.Send", func() error {
			_, err := c.Broadcasts.Send(&resend.SendBroadcastRequest{BroadcastId: broadcastID, ScheduledAt: "in 1 hour"})
			return err
		}},
		{"Broadcasts.Remove", func() error { _, err := c.Broadcasts.Remove(broadcastID); return err }},

		{"Webhooks.Create", func() error {
			r, err := c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: "https://hooks.example.com/go", Events: []string{"email.delivered"}})
			if err != nil {
				return err
			}
			webhookID = r.Id
			return expect(r.SigningSecret != "", "signing_secret", r)
		}},
		{"Webhooks.List", func() error {
			r, err := c.Webhooks.List()
			if err != nil {
				return err
			}
			return expect(len(r.Data) >= 1, "data[]", r)
		}},
		{"Webhooks.Get", func() error { _, err := c.Webhooks.Get(webhookID); return err }},
		{"Webhooks.Update", func() error {
			_, err := c.Webhooks.Update(webhookID, &resend.UpdateWebhookRequest{Events: []string{"email.delivered", "email.bounced"}})
			return err
		}},
		{"Webhooks.Update{Status}", func() error {
			_, err := c.Webhooks.Update(webhookID, &resend.UpdateWebhookRequest{Status: str("disabled")})
			return err
		}},
		{"Webhooks.Verify", func() error { return verifyDelivery(a, c) }},
		{"Webhooks.Remove", func() error { _, err := c.Webhooks.Remove(webhookID); return err }},

		{"Topics.Remove", func() error { _, err := c.Topics.Remove(topicID); return err }},
		{"ContactProperties.Remove", func() error { _, err := c.ContactProperties.Remove(propertyID); return err }},
		{"Segments.Remove", func() error { _, err := c.Segments.Remove(segmentID); return err }},
		{"Audiences.Remove", func() error { _, err := c.Audiences.Remove(audienceID); return err }},
		{"Domains.Remove", func() error { _, err := c.Domains.Remove(domainID); return err }},
	}
	_ = suppressionID

	known := map[string]bool{}
	for _, call := range calls {
		known[strings.SplitN(call.name, "{", 2)[0]] = true
		t.Run(call.name, func(t *testing.T) {
			err := call.run()
			reason, unsupported := goUnsupported[call.name]
			switch {
			case unsupported && err == nil:
				t.Errorf("succeeds now, but is listed as unsupported (%s): move it out of goUnsupported and docs/resend.md's not-yet rows", reason)
			case !unsupported && err != nil:
				t.Errorf("failed: %v", err)
			case unsupported:
				t.Logf("unsupported (%s): %v", reason, err)
			}
		})
	}
	for _, m := range sdkMethods(reflect.ValueOf(c).Elem()) {
		if !known[m] {
			t.Errorf("the SDK has %s and TestGoSDK does not call it: add it there, to goUnsupported if it fails, and to docs/resend.md", m)
		}
	}
	for name := range goUnsupported {
		found := false
		for _, call := range calls {
			found = found || call.name == name
		}
		if !found {
			t.Errorf("goUnsupported lists %s, which TestGoSDK does not call", name)
		}
	}
}

// verifyDelivery has the node deliver a test event to a receiver here and
// checks it with the SDK's own Verify, by the svix-* headers every
// delivery carries.
func verifyDelivery(a *testapp.App, c *resend.Client) error {
	type delivery struct {
		h    http.Header
		body string
	}
	got := make(chan delivery, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case got <- delivery{r.Header, string(b)}:
		default:
		}
	}))
	defer recv.Close()
	wh, err := c.Webhooks.Create(&resend.CreateWebhookRequest{Endpoint: recv.URL, Events: []string{"email.delivered"}})
	if err != nil {
		return err
	}
	defer c.Webhooks.Remove(wh.Id)
	if r := a.Do("POST", "/v1/webhooks/deliveries", map[string]any{"webhook_id": wh.Id}); r.Status >= 300 {
		return fmt.Errorf("test delivery: %d %s", r.Status, r.Body)
	}
	select {
	case d := <-got:
		return c.Webhooks.Verify(&resend.VerifyWebhookOptions{Payload: d.body, WebhookSecret: wh.SigningSecret, Headers: resend.WebhookHeaders{
			Id: d.h.Get("Svix-Id"), Timestamp: d.h.Get("Svix-Timestamp"), Signature: d.h.Get("Svix-Signature")}})
	case <-time.After(20 * time.Second):
		return fmt.Errorf("no delivery arrived")
	}
}

// sdkMethods names every method of the client's services (Service.Method,
// a WithContext or WithOptions variant counted as its plain method), and
// of the services inside them (Emails.Receiving, Contacts.Topics, ...).
func sdkMethods(client reflect.Value) []string {
	var names []string
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		seen := map[string]bool{}
		for i := 0; i < v.NumMethod(); i++ {
			m := v.Type().Method(i).Name
			m = strings.TrimSuffix(strings.TrimSuffix(m, "WithContext"), "WithOptions")
			if !seen[m] {
				seen[m] = true
				names = append(names, prefix+m)
			}
		}
		e := v
		if e.Kind() == reflect.Interface {
			e = e.Elem()
		}
		if e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		if e.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < e.NumField(); i++ {
			f := e.Type().Field(i)
			if f.IsExported() && (f.Type.Kind() == reflect.Interface || f.Type.Kind() == reflect.Pointer) && strings.Contains(f.Type.String(), "Svc") {
				walk(e.Field(i), prefix+f.Name+".")
			}
		}
	}
	t := client.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.IsExported() && strings.Contains(f.Type.String(), "Svc") {
			walk(client.Field(i), f.Name+".")
		}
	}
	return names
}

// goUnsupported are the Go SDK's calls that do not work against Mailroom,
// each with why; docs/resend.md has the same rows.
var goUnsupported = unsupported(
	notOffered("tracking is chosen per email (the spec refuses a per-domain switch)", "Domains.Update"),
	notOffered("Mailroom's segments are rules over contacts, not lists a contact is added to", "Contacts.Segments.Add", "Contacts.Segments.Remove"),
	notOffered("the spec keeps content out of PATCH /v1/templates/{id} (a new version is POST /v1/templates/{id}/versions)", "Templates.Update"),
	notOffered("the spec answers a delete with deleted: <id>, the SDK decodes a boolean (the row is deleted)", "Webhooks.Remove", "Templates.Remove"),
)
