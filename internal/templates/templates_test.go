package templates_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/templates"
	"mailroom/internal/testkit/testdb"
)

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Welcome, friends!":   "welcome-friends",
		"  Order #42 shipped": "order-42-shipped",
		"Ünïcode only ✓":      "n-code-only",
		"!!!":                 "template",
		"":                    "template",
	} {
		if got := templates.Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestForSend: the send path's render answers the spec's codes, sees a
// republished version at once, and never another workspace's template.
func TestForSend(t *testing.T) {
	ctx := context.Background()
	svc := templates.New(testdb.Open(t), clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)))
	tpl, err := svc.Create(ctx, "ws_a", templates.CreateInput{Name: "Receipt", Publish: true,
		Content: templates.Content{Subject: "Order {{n}}", Text: "v1 {{n}}", Variables: []templates.Variable{{Name: "n", Required: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := svc.ForSend(ctx, "ws_a", "receipt", map[string]any{"n": "7"})
	if err != nil || r.Subject != "Order 7" || r.Text != "v1 7" || r.Version != 1 || r.TemplateID != tpl.ID {
		t.Fatalf("ForSend by slug = %+v, %v", r, err)
	}
	if _, err := svc.ForSend(ctx, "ws_a", tpl.ID, nil); !apierr.Is(err, "template_variables_missing") {
		t.Errorf("no variables: %v, want template_variables_missing", err)
	}
	if _, err := svc.ForSend(ctx, "ws_b", tpl.ID, map[string]any{"n": "7"}); !apierr.Is(err, "invalid_template") {
		t.Errorf("another workspace: %v, want invalid_template", err)
	}
	if _, err := svc.AddVersion(ctx, "ws_a", tpl.ID, templates.Content{Text: "v2 {{n}}"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Publish(ctx, "ws_a", tpl.ID, "", nil); err != nil {
		t.Fatal(err)
	}
	if r, err = svc.ForSend(ctx, "ws_a", tpl.ID, map[string]any{"n": "8"}); err != nil || r.Text != "v2 8" || r.Subject != "" || r.Version != 2 {
		t.Errorf("after republishing: %+v, %v", r, err)
	}
	draft, err := svc.Create(ctx, "ws_a", templates.CreateInput{Name: "Draft", Content: templates.Content{Text: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ForSend(ctx, "ws_a", draft.ID, nil); !apierr.Is(err, "template_not_published") {
		t.Errorf("draft: %v, want template_not_published", err)
	}
	if e, _ := apierr.As(func() error { _, err := svc.ForSend(ctx, "ws_a", draft.ID, nil); return err }()); e == nil || e.Status != 422 {
		t.Errorf("template_not_published status: %+v, want 422", e)
	}
	if _, err := svc.Delete(ctx, "ws_a", tpl.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ForSend(ctx, "ws_a", tpl.ID, map[string]any{"n": "1"}); !apierr.Is(err, "invalid_template") {
		t.Errorf("deleted: %v, want invalid_template", err)
	}
}

// TestPublishedStaysPut: a version read with Published renders as it was
// after another is published (a broadcast's fan-out keeps one version),
// and Published answers ForSend's errors.
func TestPublishedStaysPut(t *testing.T) {
	ctx := context.Background()
	svc := templates.New(testdb.Open(t), clock.Real{})
	tpl, err := svc.Create(ctx, "ws_a", templates.CreateInput{Name: "News", Publish: true, Content: templates.Content{Subject: "S", Text: "v1 {{n}}"}})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := svc.Published(ctx, "ws_a", tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddVersion(ctx, "ws_a", tpl.ID, templates.Content{Subject: "S", Text: "v2 {{n}}"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Publish(ctx, "ws_a", tpl.ID, "", nil); err != nil {
		t.Fatal(err)
	}
	if r, err := pub.Render(map[string]any{"n": "1"}); err != nil || r.Text != "v1 1" || r.Version != 1 {
		t.Errorf("the version read before republishing rendered %+v, %v; want v1", r, err)
	}
	if r, err := svc.ForSend(ctx, "ws_a", tpl.ID, map[string]any{"n": "2"}); err != nil || r.Text != "v2 2" {
		t.Errorf("ForSend after republishing: %+v, %v; want v2", r, err)
	}
	if _, err := svc.Published(ctx, "ws_b", tpl.ID); !apierr.Is(err, "invalid_template") {
		t.Errorf("another workspace: %v, want invalid_template", err)
	}
}

// TestConcurrentVersions: versions written at once get distinct numbers;
// none is lost and none is duplicated.
func TestConcurrentVersions(t *testing.T) {
	ctx := context.Background()
	svc := templates.New(testdb.Open(t), clock.Real{})
	tpl, err := svc.Create(ctx, "ws_a", templates.CreateInput{Name: "T", Content: templates.Content{Text: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if _, err := svc.AddVersion(ctx, "ws_a", tpl.ID, templates.Content{Text: "y"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, vs, err := svc.Versions(ctx, "ws_a", tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LatestVersion != 9 || len(vs) != 9 || vs[0].Version != 9 || vs[8].Version != 1 {
		t.Errorf("latest_version %d, %d versions, newest %d: want them equal", got.LatestVersion, len(vs), vs[0].Version)
	}
}
