package contacts

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"mailroom/internal/apierr"
)

func str(s string) *string { return &s }

// refusedWith checks err is an invalid_request whose message holds want,
// or that err is nil when want is "".
func refusedWith(t *testing.T, what string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("%s refused: %v", what, err)
		}
		return
	}
	if e, ok := apierr.As(err); !ok || e.Code != "invalid_request" || !strings.Contains(e.Message, want) {
		t.Errorf("%s: %v, want invalid_request saying %q", what, err, want)
	}
}

// TestNormalizeEmailRules: the stored form of an address, and what is
// refused.
func TestNormalizeEmailRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"ann@example.com", "ann@example.com"},
		{"  Ann@Example.COM  ", "ann@example.com"},
		{"Ann Lee <Ann@Example.com>", "ann@example.com"},
		{`"Lee, Ann" <ann@example.com>`, "ann@example.com"},
		{"ann+news@example.com", "ann+news@example.com"},
		{"ann@bücher.example", "ann@xn--bcher-kva.example"},
		{"", ""},
		{"ann", ""},
		{"ann@", ""},
		{"@example.com", ""},
		{"ann@@example.com", ""},
		{"ann@example.com, bob@example.com", ""},
	} {
		got, err := NormalizeEmail(c.in)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("NormalizeEmail(%q) = %q, want a refusal", c.in, got)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestTagRules: a tag is 1 to 64 characters without comma or line break,
// stored lowercased; a list drops repeats compared without case.
func TestTagRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want, refusal string
	}{
		{"Trial", "trial", ""},
		{"  VIP  ", "vip", ""},
		{"née", "née", ""},
		{"Über", "über", ""},
		{strings.Repeat("t", MaxTagLen), strings.Repeat("t", MaxTagLen), ""},
		{strings.Repeat("é", MaxTagLen), strings.Repeat("é", MaxTagLen), ""}, // characters, not bytes
		{strings.Repeat("t", MaxTagLen+1), "", "longer than 64 characters"},
		{"", "", "this one is empty"},
		{"   ", "", "this one is empty"},
		{"a,b", "", "contains a comma or a line break"},
		{"a\nb", "", "contains a comma or a line break"},
		{"a\rb", "", "contains a comma or a line break"},
		{"a\xffb", "", "not valid UTF-8"},
	} {
		got, err := NormalizeTag(c.in)
		refusedWith(t, "NormalizeTag("+c.in+")", err, c.refusal)
		if c.refusal == "" && got != c.want {
			t.Errorf("NormalizeTag(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in      []string
		want    []string
		refusal string
	}{
		{nil, []string{}, ""},
		{[]string{"a", "B", "b", " A "}, []string{"a", "b"}, ""},
		{[]string{"z", "y", "z"}, []string{"z", "y"}, ""}, // first seen order, not sorted
		{[]string{"ok", "bad,tag"}, nil, "contains a comma"},
	} {
		got, err := NormalizeTags(c.in)
		refusedWith(t, "NormalizeTags", err, c.refusal)
		if c.refusal == "" && !slices.Equal(got, c.want) {
			t.Errorf("NormalizeTags(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestAttributeRules: attribute names and values, and the merge patch that
// reports only what really changed.
func TestAttributeRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, refusal string }{
		{"plan", ""},
		{"Company Name", ""},
		{"名前", ""},
		{strings.Repeat("n", MaxAttrNameLen), ""},
		{strings.Repeat("n", MaxAttrNameLen+1), "longer than 100 characters"},
		{"", "An attribute name is empty"},
		{"tab\there", "control character"},
		{"del\x7f", "control character"},
		{"bad\xff", "invalid UTF-8"},
	} {
		refusedWith(t, "CheckAttrName("+c.name+")", CheckAttrName(c.name), c.refusal)
	}
	refusedWith(t, "a value at the limit", CheckAttrValue("a", strings.Repeat("v", MaxAttrValueLen)), "")
	refusedWith(t, "a value past the limit", CheckAttrValue("a", strings.Repeat("v", MaxAttrValueLen+1)), `Attribute "a" is longer than 8192 bytes`)

	base := map[string]string{"plan": "free", "city": "Paris"}
	for _, c := range []struct {
		name    string
		patch   map[string]*string
		want    map[string]string
		changed []string
	}{
		{"a new name", map[string]*string{"team": str("red")}, map[string]string{"plan": "free", "city": "Paris", "team": "red"}, []string{"team"}},
		{"a changed value", map[string]*string{"plan": str("pro")}, map[string]string{"plan": "pro", "city": "Paris"}, []string{"plan"}},
		{"the same value changes nothing", map[string]*string{"plan": str("free")}, base, []string{}},
		{"null clears a name", map[string]*string{"city": nil}, map[string]string{"plan": "free"}, []string{"city"}},
		{"null on an absent name changes nothing", map[string]*string{"zip": nil}, base, []string{}},
		{"an empty value is a value", map[string]*string{"city": str("")}, map[string]string{"plan": "free", "city": ""}, []string{"city"}},
		{"changed names come sorted", map[string]*string{"zeta": str("1"), "alpha": str("2"), "plan": nil}, map[string]string{"city": "Paris", "zeta": "1", "alpha": "2"}, []string{"alpha", "plan", "zeta"}},
	} {
		got, changed := MergePatch(base, c.patch)
		if !maps.Equal(got, c.want) || !slices.Equal(changed, c.changed) {
			t.Errorf("%s: MergePatch = %v changed %v, want %v changed %v", c.name, got, changed, c.want, c.changed)
		}
	}
	if base["plan"] != "free" || len(base) != 2 {
		t.Errorf("MergePatch changed its input: %v", base)
	}

	many := map[string]*string{}
	for i := range MaxAttrsPerCall + 1 {
		many[strings.Repeat("k", i+1)] = str("v")
	}
	for _, c := range []struct {
		name    string
		patch   map[string]*string
		min     int
		refusal string
	}{
		{"one name", map[string]*string{"a": str("1")}, 1, ""},
		{"none when one is needed", map[string]*string{}, 1, "Send 1 to 100 attribute names per call; this one has 0"},
		{"none when none is needed", map[string]*string{}, 0, ""},
		{"past the limit", many, 1, "this one has 101"},
		{"a bad name", map[string]*string{"": str("1")}, 1, "An attribute name is empty"},
		{"a long value", map[string]*string{"a": str(strings.Repeat("v", MaxAttrValueLen+1))}, 1, "longer than 8192 bytes"},
		{"a null value is not checked for length", map[string]*string{"a": nil}, 1, ""},
	} {
		refusedWith(t, c.name, checkPatch(c.patch, c.min), c.refusal)
	}
}

// TestNameAndSearchRules: first and last names, and the ?q= search term.
func TestNameAndSearchRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ v, refusal string }{
		{"Ada", ""},
		{strings.Repeat("é", MaxNameLen), ""},
		{strings.Repeat("a", MaxNameLen+1), "first_name is longer than 256 characters"},
		{"Ada\nLovelace", "first_name contains a line break"},
		{"Ada\r", "first_name contains a line break"},
	} {
		refusedWith(t, "checkName("+c.v+")", checkName("first_name", c.v), c.refusal)
	}
	for _, c := range []struct{ q, refusal string }{
		{"ada", ""},
		{"", ""},
		{strings.Repeat("é", MaxSearchTerm), ""},
		{strings.Repeat("a", MaxSearchTerm+1), "q is longer than 256 characters"},
		{"a\x00b", "holds a NUL character"},
		{"\xc3\x28", "not valid UTF-8"},
	} {
		refusedWith(t, "CheckSearchTerm", CheckSearchTerm(c.q), c.refusal)
	}
}

// TestImportColumnRules: how an export's column names, status words, tag
// cells and separators are read.
func TestImportColumnRules(t *testing.T) {
	t.Parallel()
	for col, want := range map[string]string{
		"Email Address": "email", "E-Mail": "email", "EMAIL": "email", "subscriber": "email",
		"First Name": "first_name", "FNAME": "first_name", "Prénom": "first_name", "name": "first_name",
		"Last Name": "last_name", "surname": "last_name", "Nachname": "last_name",
		"TAGS": "tags", "Groups": "tags", "Member Status": "status", "Subscribed": "subscribed",
		"Unsubscribed": "unsubscribed", "attributes": "attribute", "Company": "attribute", "": "attribute",
	} {
		if got := ProposedRole(col); got != want {
			t.Errorf("ProposedRole(%q) = %q, want %q", col, got, want)
		}
	}
	for col, want := range map[string]string{
		"Plan": "Plan", "MEMBER_RATING": "MEMBER_RATING", "_x": "_x",
		"Company Name": "company_name", "Sign-up date": "sign_up_date", "2nd email": "2nd_email",
		"  Spaced  ": "spaced", "Café": "cafe", "!!!": "!!!",
	} {
		if got := AttrNameOf(col); got != want {
			t.Errorf("AttrNameOf(%q) = %q, want %q", col, got, want)
		}
	}
	for in, want := range map[string]string{
		"subscribed": StatusSubscribed, " Active ": StatusSubscribed, "CONFIRMED": StatusSubscribed, "opt_in": StatusSubscribed,
		"unsubscribed": StatusUnsubscribed, "opted_out": StatusUnsubscribed, "inactive": StatusUnsubscribed,
		"pending": StatusPending, "Unconfirmed": StatusPending,
		"cleaned": StatusCleaned, "bounced": StatusCleaned, "complained": StatusCleaned, "junk": StatusCleaned,
		"": "", "yes": "", "subscribed!": "",
	} {
		if got := statusOf(in); got != want {
			t.Errorf("statusOf(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		cell string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"vip", []string{"vip"}},
		{"vip, trial ,paid", []string{"vip", "trial", "paid"}},
		{"vip;trial;paid", []string{"vip", "trial", "paid"}},
		{"a,b;c", []string{"a", "b;c"}},        // more commas than semicolons: commas separate
		{"a;b;c,d", []string{"a", "b", "c,d"}}, // and the other way round
		{`"vip","trial"`, []string{"vip", "trial"}},
		{`"a, b","c"`, []string{"a, b", "c"}}, // Mailchimp quotes each tag, commas inside are the tag's
		{"a,,b, ,", []string{"a", "b"}},
	} {
		if got := splitTags(c.cell); !slices.Equal(got, c.want) {
			t.Errorf("splitTags(%q) = %q, want %q", c.cell, got, c.want)
		}
	}
	for _, c := range []struct {
		data string
		want rune
	}{
		{"email,name\nann@example.com,Ann\n", ','},
		{"email;name\nann@example.com;Ann\n", ';'},
		{"email;name;price\n", ';'},
		{`"a;b;c",d,e` + "\n", ','}, // semicolons inside quotes do not count
		{"email\n", ','},
		{"a;b,c\n", ','}, // a tie keeps the comma
		{"email;first;last", ';'},
	} {
		if got := detectComma([]byte(c.data)); got != c.want {
			t.Errorf("detectComma(%q) = %q, want %q", c.data, got, c.want)
		}
	}
}

// TestCanonicalAddressRules: which addresses the duplicates report takes
// for one mailbox.
func TestCanonicalAddressRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, local, domain string }{
		{"Ann.Lee@Example.com", "annlee", "example.com"},
		{"ann+news@example.com", "ann", "example.com"},
		{"a.n.n+x+y@example.com", "ann", "example.com"},
		{"+tag@example.com", "+tag", "example.com"}, // a local part that is all tag keeps it
		{"ann@googlemail.com", "ann", "gmail.com"},
		{"ann@mail.googlemail.com", "ann", "mail.googlemail.com"},
		{"a@b@example.com", "a@b", "example.com"}, // the last @ splits
		{"no-at-sign", "no-at-sign", ""},
	} {
		if l, d := canonicalAddress(c.in); l != c.local || d != c.domain {
			t.Errorf("canonicalAddress(%q) = %q, %q; want %q, %q", c.in, l, d, c.local, c.domain)
		}
	}
}

// TestStatusRules: the membership statuses, and which wins a merge (an
// unsubscribe or a cleaning is never undone by a subscription).
func TestStatusRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status string
		valid  bool
	}{
		{StatusSubscribed, true}, {StatusUnsubscribed, true}, {StatusPending, true}, {StatusCleaned, true},
		{"Subscribed", false}, {"active", false}, {"", false}, {"bounced", false},
	} {
		if got := ValidStatus(c.status); got != c.valid {
			t.Errorf("ValidStatus(%q) = %v", c.status, got)
		}
	}
	for _, c := range []struct{ stronger, weaker string }{
		{StatusUnsubscribed, StatusCleaned},
		{StatusUnsubscribed, StatusSubscribed},
		{StatusCleaned, StatusSubscribed},
		{StatusSubscribed, StatusPending},
		{StatusPending, "whatever"}, /* an unknown status ranks as pending does */
	} {
		if statusRank(c.stronger) < statusRank(c.weaker) {
			t.Errorf("a merge of %s and %s keeps %s", c.stronger, c.weaker, c.weaker)
		}
	}
	if statusRank(StatusSubscribed) <= statusRank(StatusPending) || statusRank(StatusCleaned) <= statusRank(StatusSubscribed) ||
		statusRank(StatusUnsubscribed) <= statusRank(StatusCleaned) {
		t.Error("the merge ranks are not strictly ordered unsubscribed > cleaned > subscribed > pending")
	}
}

// TestPropertyFallbackRules: a declared property's fallback must be of its
// type, a number this server can hold, and no longer than an attribute.
func TestPropertyFallbackRules(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxAttrValueLen+1)
	for _, c := range []struct {
		name, typ string
		v         *Value
		want      string // "" accepted
		stored    *string
	}{
		{"none", PropertyString, nil, "", nil},
		{"a string", PropertyString, &Value{Text: "friend"}, "", str("friend")},
		{"an empty string", PropertyString, &Value{Text: ""}, "", str("")},
		{"a number for a string", PropertyString, &Value{Text: "3", Number: true}, "must be a string", nil},
		{"a number", PropertyNumber, &Value{Text: "3.5", Number: true}, "", str("3.5")},
		{"a negative exponent", PropertyNumber, &Value{Text: "-1e-3", Number: true}, "", str("-1e-3")},
		{"a string for a number", PropertyNumber, &Value{Text: "3"}, "must be a number", nil},
		{"a number too large", PropertyNumber, &Value{Text: "1e999", Number: true}, "not a number this server can hold", nil},
		{"too long", PropertyString, &Value{Text: long}, "longer than", nil},
	} {
		got, err := checkFallback(c.typ, c.v)
		refusedWith(t, c.name, err, c.want)
		same := got == nil && c.stored == nil || got != nil && c.stored != nil && *got == *c.stored
		if c.want == "" && !same {
			t.Errorf("%s: stored %v, want %v", c.name, got, c.stored)
		}
	}
}

// TestAudienceRules: an audience's name and description, and the
// confirmation template's link.
func TestAudienceRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, stored, want string }{
		{"News", "News", ""},
		{"  News  ", "News", ""},
		{strings.Repeat("é", maxAudienceName), strings.Repeat("é", maxAudienceName), ""},
		{strings.Repeat("é", maxAudienceName+1), "", "1 to"},
		{"", "", "1 to"},
		{"   ", "", "1 to"},
		{"two\nlines", "", "on one line"},
		{"cr\rhere", "", "on one line"},
	} {
		got, err := checkAudienceName(c.in)
		refusedWith(t, "name "+c.in, err, c.want)
		if c.want == "" && got != c.stored {
			t.Errorf("name %q stored as %q, want %q", c.in, got, c.stored)
		}
	}
	refusedWith(t, "a description at the limit", checkDescription(strings.Repeat("d", maxDescription)), "")
	refusedWith(t, "a description over the limit", checkDescription(strings.Repeat("d", maxDescription+1)), "longer than")
	for _, c := range []struct {
		tpl  string
		says bool
	}{
		{"Confirm: {{confirm_url}}", true},
		{"Confirm: {{ confirm_url }}", true},
		{"<a href=\"{{  confirm_url  }}\">yes</a>", true},
		{"Confirm: {{ confirm_link }}", false},
		{"confirm_url", false},
		{"", false},
	} {
		if got := mentionsConfirmURL(c.tpl); got != c.says {
			t.Errorf("mentionsConfirmURL(%q) = %v", c.tpl, got)
		}
	}
}
