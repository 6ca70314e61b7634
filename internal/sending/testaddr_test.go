package sending

import "testing"

func TestClassifyTestAddress(t *testing.T) {
	t.Parallel()
	const svc = "mailroom.localhost"
	tests := []struct {
		email, kind, label string
		ok                 bool
	}{
		{"delivered@mailroom.localhost", TestDelivered, "", true},
		{"bounced@mailroom.localhost", TestBounced, "", true},
		{"complained@mailroom.localhost", TestComplained, "", true},
		{"suppressed@mailroom.localhost", TestSuppressed, "", true},
		{"Delivered@MAILROOM.localhost", TestDelivered, "", true},
		{"delivered+signup-42@mailroom.localhost", TestDelivered, "signup-42", true},
		{"BOUNCED+CaseKept@mailroom.localhost", TestBounced, "CaseKept", true},
		{"delivered+@mailroom.localhost", TestDelivered, "", true},
		{"delivered+a+b@mailroom.localhost", TestDelivered, "a+b", true},
		{"delivered@mailroom.localhost.", TestDelivered, "", true},
		{"delivered@example.com", "", "", false},
		{"delivered@sub.mailroom.localhost", "", "", false},
		{"onboarding@mailroom.localhost", "", "", false},
		{"deliveredx@mailroom.localhost", "", "", false},
		{"x+delivered@mailroom.localhost", "", "", false},
		{"delivered", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		kind, label, ok := ClassifyTestAddress(tt.email, svc)
		if kind != tt.kind || label != tt.label || ok != tt.ok {
			t.Errorf("ClassifyTestAddress(%q) = %q, %q, %v; want %q, %q, %v", tt.email, kind, label, ok, tt.kind, tt.label, tt.ok)
		}
	}
	if _, _, ok := ClassifyTestAddress("delivered@mailroom.localhost", ""); ok {
		t.Error("an empty service domain must match nothing")
	}
}
