package mailauth

import "testing"

func TestAlignmentAndDomains(t *testing.T) {
	for _, tc := range []struct {
		d, from string
		strict  bool
		want    bool
	}{
		{"example.org", "example.org", true, true},
		{"mail.example.org", "feedback.example.org", false, true},
		{"mail.example.org", "feedback.example.org", true, false},
		{"example.net", "example.org", false, false},
		{"", "example.org", false, false},
		{"foo.co.uk", "bar.co.uk", false, false}, // public suffix, not one organisation
	} {
		if got := Aligned(tc.d, tc.from, tc.strict); got != tc.want {
			t.Errorf("Aligned(%q, %q, %v) = %v", tc.d, tc.from, tc.strict, got)
		}
	}
	if d := (Sender{MailFrom: "a@Feedback.Example.org."}).SPFDomain(); d != "feedback.example.org" {
		t.Errorf("MAIL FROM domain %q", d)
	}
	if d := (Sender{Helo: "MX.example.net."}).SPFDomain(); d != "mx.example.net" {
		t.Errorf("null sender's SPF domain %q, want the HELO name", d)
	}
}
