package templates_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/templates"
	"mailroom/internal/testkit/testdb"
)

func newService(t *testing.T) *templates.Service {
	t.Helper()
	return templates.New(testdb.Open(t), clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)))
}

func ptr(s string) *string { return &s }

// TestCreateRules: what Create refuses (invalid_request, with a message
// naming the field) and what it takes, one rule a row.
func TestCreateRules(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	vars := func(names ...string) []templates.Variable {
		var out []templates.Variable
		for _, n := range names {
			out = append(out, templates.Variable{Name: n})
		}
		return out
	}
	many := make([]string, templates.MaxVariables+1)
	for i := range many {
		many[i] = "v" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
	}
	for _, c := range []struct {
		name string
		in   templates.CreateInput
		want string // "" when accepted; else a fragment of the message
	}{
		{"plain", templates.CreateInput{Name: "Welcome", Content: templates.Content{Text: "Hi"}}, ""},
		{"empty name", templates.CreateInput{Name: "", Content: templates.Content{Text: "Hi"}}, "name must be 1 to 200 characters"},
		{"blank name", templates.CreateInput{Name: " \t ", Content: templates.Content{Text: "Hi"}}, "name must be 1 to 200 characters"},
		{"name at the limit", templates.CreateInput{Name: strings.Repeat("n", templates.MaxNameLen)}, ""},
		{"name past the limit", templates.CreateInput{Name: strings.Repeat("n", templates.MaxNameLen+1)}, "name must be 1 to 200 characters"},
		{"given slug", templates.CreateInput{Name: "A", Slug: "order-42"}, ""},
		{"slug in capitals", templates.CreateInput{Name: "B", Slug: "Order"}, `slug "Order" must be`},
		{"slug with a leading hyphen", templates.CreateInput{Name: "C", Slug: "-order"}, "slug"},
		{"slug with a trailing hyphen", templates.CreateInput{Name: "D", Slug: "order-"}, "slug"},
		{"slug with an underscore", templates.CreateInput{Name: "E", Slug: "order_42"}, "slug"},
		{"slug past the limit", templates.CreateInput{Name: "F", Slug: strings.Repeat("s", templates.MaxSlugLen+1)}, "slug"},
		{"description past the limit", templates.CreateInput{Name: "G", Description: strings.Repeat("d", templates.MaxDescription+1)}, "description is over 2000 characters"},
		{"subject that does not parse", templates.CreateInput{Name: "H", Content: templates.Content{Subject: "Hi {{#if x}}"}}, "The template"},
		{"html that does not parse", templates.CreateInput{Name: "I", Content: templates.Content{HTML: "<p>{{ name </p>"}}, "The template"},
		{"declared variables", templates.CreateInput{Name: "J", Content: templates.Content{Text: "{{a}} {{b}}", Variables: vars("a", "b")}}, ""},
		{"a variable without a name", templates.CreateInput{Name: "K", Content: templates.Content{Variables: vars("")}}, "variables[0]: name must be"},
		{"a variable name with braces", templates.CreateInput{Name: "L", Content: templates.Content{Variables: vars("ok", "{x}")}}, "variables[1]: name must be"},
		{"a variable name with a hash", templates.CreateInput{Name: "M", Content: templates.Content{Variables: vars("#x")}}, "variables[0]"},
		{"a variable name with a space", templates.CreateInput{Name: "N", Content: templates.Content{Variables: vars("first name")}}, "variables[0]"},
		{"a variable name past the limit", templates.CreateInput{Name: "O", Content: templates.Content{Variables: vars(strings.Repeat("v", templates.MaxVariableName+1))}}, "variables[0]"},
		{"a variable declared twice", templates.CreateInput{Name: "P", Content: templates.Content{Variables: vars("a", "b", "a")}}, `variables[2]: "a" is declared twice`},
		{"too many variables", templates.CreateInput{Name: "Q", Content: templates.Content{Variables: vars(many...)}}, "variables has 101 entries; at most 100"},
		{"published without a body", templates.CreateInput{Name: "R", Publish: true, Content: templates.Content{Subject: "Only a subject"}}, "has neither html nor text, so it cannot be published"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tpl, err := svc.Create(context.Background(), "ws_rules", c.in)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tpl.LatestVersion != 1 || tpl.ID == "" {
					t.Fatalf("created %+v", tpl)
				}
				return
			}
			e, ok := apierr.As(err)
			if !ok || e.Status != 400 && e.Status != 422 || !strings.Contains(e.Message, c.want) {
				t.Fatalf("got %v, want a refusal saying %q", err, c.want)
			}
		})
	}
}

// TestSlugRules: the slug derived from a name, and the next free one when
// it is taken.
func TestSlugRules(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Password reset":            "password-reset",
		"password--reset":           "password-reset",
		"-- edge --":                "edge",
		"CamelCaseName":             "camelcasename",
		"2024 report":               "2024-report",
		"tab\tand\nnewline":         "tab-and-newline",
		"émoji 🎉 party":             "moji-party",
		"under_score.and.dot":       "under-score-and-dot",
		"trailing punctuation!!!":   "trailing-punctuation",
		"UPPER lower 123":           "upper-lower-123",
		"  leading and trailing   ": "leading-and-trailing",
		"ⅷ roman numeral only":      "roman-numeral-only",
		"already-a-slug":            "already-a-slug",
		"x":                         "x",
	} {
		if got := templates.Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
	if got := templates.Slugify(strings.Repeat("ab ", 80)); len(got) > templates.MaxSlugLen || strings.HasSuffix(got, "-") {
		t.Errorf("a long name's slug %q: over %d bytes or ending in a hyphen", got, templates.MaxSlugLen)
	}

	svc := newService(t)
	ctx := context.Background()
	var slugs []string
	for range 3 {
		tpl, err := svc.Create(ctx, "ws_slug", templates.CreateInput{Name: "Welcome"})
		if err != nil {
			t.Fatal(err)
		}
		slugs = append(slugs, tpl.Slug)
	}
	if slugs[0] != "welcome" || slugs[1] == slugs[0] || slugs[2] == slugs[1] || !strings.HasPrefix(slugs[1], "welcome-") {
		t.Errorf("three templates named Welcome got slugs %v, want welcome then free ones like it", slugs)
	}
	if _, err := svc.Create(ctx, "ws_slug", templates.CreateInput{Name: "Other", Slug: "welcome"}); !apierr.Is(err, "slug_taken") {
		t.Errorf("a slug given and taken: %v, want slug_taken", err)
	}
	if _, err := svc.Create(ctx, "ws_other", templates.CreateInput{Name: "Other", Slug: "welcome"}); err != nil {
		t.Errorf("the same slug in another workspace: %v", err)
	}
}

// TestVariableRules: how a send fills declared variables: a given value
// wins over a default, a default fills a gap, every missing required one
// is named (sorted), an optional one without default renders empty.
func TestVariableRules(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := context.Background()
	_, err := svc.Create(ctx, "ws_vars", templates.CreateInput{Name: "Vars", Publish: true, Content: templates.Content{
		Subject: "{{greeting}} {{name}}", Text: "[{{greeting}}|{{name}}|{{plan}}|{{note}}]",
		Variables: []templates.Variable{
			{Name: "greeting", Default: ptr("Hello")},
			{Name: "name", Required: true},
			{Name: "plan", Required: true},
			{Name: "note"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		vars    map[string]any
		text    string
		missing []string
	}{
		{"all given", map[string]any{"greeting": "Hi", "name": "Ada", "plan": "pro", "note": "n"}, "[Hi|Ada|pro|n]", nil},
		{"default fills the gap", map[string]any{"name": "Ada", "plan": "pro"}, "[Hello|Ada|pro|]", nil},
		{"a given empty value is not missing", map[string]any{"name": "", "plan": ""}, "[Hello|||]", nil},
		{"undeclared values pass through unused", map[string]any{"name": "Ada", "plan": "pro", "extra": "x"}, "[Hello|Ada|pro|]", nil},
		{"one required missing", map[string]any{"name": "Ada"}, "", []string{"plan"}},
		{"two required missing, sorted", map[string]any{"greeting": "Hi"}, "", []string{"name", "plan"}},
		{"nothing given", nil, "", []string{"name", "plan"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := svc.ForSend(ctx, "ws_vars", "vars", c.vars)
			if c.missing == nil {
				if err != nil || r.Text != c.text {
					t.Fatalf("rendered %q, %v; want %q", r.Text, err, c.text)
				}
				return
			}
			e, ok := apierr.As(err)
			if !ok || e.Code != "template_variables_missing" || e.Status != 422 {
				t.Fatalf("got %v, want template_variables_missing", err)
			}
			if !strings.Contains(e.Message, strings.Join(c.missing, ", ")) {
				t.Fatalf("message %q does not name %v", e.Message, c.missing)
			}
		})
	}
}

// TestPreviewFillsSamples: a preview never refuses for a missing value: it
// fills each with "[name]" and says so, keeps defaults and given values,
// and warns when the version shown is not the published one.
func TestPreviewFillsSamples(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := context.Background()
	tpl, err := svc.Create(ctx, "ws_prev", templates.CreateInput{Name: "Prev", Publish: true, Content: templates.Content{
		Text: "{{greeting}} {{name}} {{city}}", Variables: []templates.Variable{{Name: "greeting", Default: ptr("Hello")}, {Name: "name", Required: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		vars   map[string]any
		text   string
		filled []string
	}{
		{"nothing given: declared and used names get samples", nil, "Hello [name] [city]", []string{"name", "city"}},
		{"a given value is used", map[string]any{"name": "Ada"}, "Hello Ada [city]", []string{"city"}},
		{"everything given", map[string]any{"name": "Ada", "city": "Paris", "greeting": "Hi"}, "Hi Ada Paris", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := svc.Preview(ctx, "ws_prev", tpl.ID, "", c.vars, "")
			if err != nil || p.Text != c.text {
				t.Fatalf("preview %q, %v; want %q", p.Text, err, c.text)
			}
			slices.Sort(p.FilledWithSamples)
			want := slices.Clone(c.filled)
			slices.Sort(want)
			if !slices.Equal(p.FilledWithSamples, want) || len(p.Warnings) != len(want) {
				t.Fatalf("filled %v with warnings %v, want %v and one warning each", p.FilledWithSamples, p.Warnings, want)
			}
		})
	}
	v2, err := svc.AddVersion(ctx, "ws_prev", tpl.ID, templates.Content{Text: "draft {{x}}"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Preview(ctx, "ws_prev", tpl.ID, v2.ID, nil, "")
	if err != nil || p.Text != "draft [x]" || !strings.Contains(strings.Join(p.Warnings, " "), "Version 2 is not the published version") {
		t.Fatalf("preview of the unpublished version: %q %v %v", p.Text, p.Warnings, err)
	}
	if _, err := svc.PreviewContent(templates.Content{Text: "{{a}}", Variables: []templates.Variable{{Name: "a"}, {Name: "a"}}}, nil, ""); !apierr.Is(err, "invalid_request") {
		t.Errorf("previewing content with a variable declared twice: %v, want invalid_request", err)
	}
}

// TestCopyName: a duplicate's name stays within the limit, cut by whole
// characters.
func TestCopyName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		max  int
		want string
	}{
		{"Welcome", 200, "Welcome (copy)"},
		{"Welcome", 10, "Wel (copy)"},
		{"Welcome", 7, " (copy)"},
		{"Bienvenüe", 15, "Bienven (copy)"}, // ü is two bytes: it does not fit in the 8 left, and is not cut in half
		{"ééé", 11, "éé (copy)"},
		{"", 20, " (copy)"},
	} {
		got := templates.CopyName(c.name, c.max)
		if len(got) > max(c.max, len(" (copy)")) || !strings.HasSuffix(got, " (copy)") || !strings.HasPrefix(c.name, strings.TrimSuffix(got, " (copy)")) {
			t.Errorf("CopyName(%q, %d) = %q: over the limit or not a prefix of the name", c.name, c.max, got)
		}
		if got != c.want {
			t.Errorf("CopyName(%q, %d) = %q, want %q", c.name, c.max, got, c.want)
		}
	}
}

// TestUpdateRules: a patch changes only the fields it names, under the
// same rules as Create, and a slug stays unique in the workspace.
func TestUpdateRules(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := context.Background()
	for _, name := range []string{"Welcome", "Receipt"} {
		if _, err := svc.Create(ctx, "ws_upd", templates.CreateInput{Name: name, Content: templates.Content{Text: "Hi"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name                string
		newName, slug, desc *string
		code                string // "" when accepted
		want                string // the slug after, or a fragment of the refusal
	}{
		{"nothing named changes nothing", nil, nil, nil, "", "welcome"},
		{"a new name keeps the slug", ptr("Hello"), nil, nil, "", "welcome"},
		{"a new slug", nil, ptr("hello"), nil, "", "hello"},
		{"a description", nil, nil, ptr("Sent on sign-up"), "", "hello"},
		{"an empty slug", nil, ptr(""), nil, "invalid_request", "slug cannot be empty"},
		{"a slug in capitals", nil, ptr("Hello"), nil, "invalid_request", `slug "Hello" must be`},
		{"a blank name", ptr("  "), nil, nil, "invalid_request", "name must be 1 to"},
		{"a description past the limit", nil, nil, ptr(strings.Repeat("d", templates.MaxDescription+1)), "invalid_request", "description is over"},
		{"another template's slug", nil, ptr("receipt"), nil, "slug_taken", `has the slug "receipt"`},
		{"its own slug again", nil, ptr("hello"), nil, "", "hello"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := "welcome"
			if got, err := svc.Get(ctx, "ws_upd", "hello"); err == nil {
				ref = got.ID
			}
			tpl, err := svc.Update(ctx, "ws_upd", ref, c.newName, c.slug, c.desc)
			if c.code == "" {
				if err != nil || tpl.Slug != c.want {
					t.Fatalf("got slug %q, %v; want %q", tpl.Slug, err, c.want)
				}
				return
			}
			if e, ok := apierr.As(err); !ok || e.Code != c.code || !strings.Contains(e.Message, c.want) {
				t.Fatalf("got %v, want %s saying %q", err, c.code, c.want)
			}
		})
	}
}

// TestPublishRules: which version Publish points sends at (by id, by
// number, else the latest), and what it refuses.
func TestPublishRules(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := context.Background()
	tpl, err := svc.Create(ctx, "ws_pub", templates.CreateInput{Name: "News", Content: templates.Content{Subject: "Only a subject"}})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := svc.AddVersion(ctx, "ws_pub", tpl.ID, templates.Content{Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	v3, err := svc.AddVersion(ctx, "ws_pub", tpl.ID, templates.Content{HTML: "<p>three</p>"})
	if err != nil {
		t.Fatal(err)
	}
	num := func(n int) *int { return &n }
	for _, c := range []struct {
		name      string
		versionID string
		number    *int
		code      string // "" when published
		want      string // the version published, or a fragment of the refusal
	}{
		{"the latest when none is named", "", nil, "", v3.ID},
		{"by number", "", num(2), "", v2.ID},
		{"by id", v3.ID, nil, "", v3.ID},
		{"the id wins over the number", v2.ID, num(3), "", v2.ID},
		{"a version without a body", "", num(1), "invalid_request", "Version 1 has neither html nor text"},
		{"a number past the latest", "", num(4), "not_found", "template version"},
		{"an unknown id", "tv_nope", nil, "not_found", "template version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := svc.Publish(ctx, "ws_pub", tpl.ID, c.versionID, c.number)
			if c.code == "" {
				if err != nil || got != c.want {
					t.Fatalf("published %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if e, ok := apierr.As(err); !ok || e.Code != c.code || !strings.Contains(e.Message, c.want) {
				t.Fatalf("got %v, want %s saying %q", err, c.code, c.want)
			}
		})
	}
	for _, c := range []struct {
		name string
		in   templates.Content
		want string
	}{
		{"a version without a body", templates.Content{Subject: "s"}, "needs html, text or both"},
		{"a version that does not parse", templates.Content{Text: "{{#if x}}"}, "The template"},
		{"a variable declared twice", templates.Content{Text: "t", Variables: []templates.Variable{{Name: "a"}, {Name: "a"}}}, "declared twice"},
	} {
		if _, err := svc.AddVersion(ctx, "ws_pub", tpl.ID, c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddVersion %s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
}
