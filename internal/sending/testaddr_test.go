package sending

import (
	"testing"
	"time"
)

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
		{"softbounce@mailroom.localhost", ScenarioSoftBounce, "", true},
		{"deferred+5m@mailroom.localhost", ScenarioDeferred, "5m", true},
		{"AutoReply@mailroom.localhost", ScenarioAutoReply, "", true},
		{"opened+30s@mailroom.localhost", ScenarioOpened, "30s", true},
		{"clicked@mailroom.localhost", ScenarioClicked, "", true},
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

func TestScenarioDelay(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		kind, label string
		want        time.Duration
	}{
		{ScenarioDeferred, "5m", 5 * time.Minute},
		{ScenarioDeferred, "30S", 30 * time.Second},
		{ScenarioDeferred, "2h", MaxScenarioDelay},
		{ScenarioDeferred, "999999999999h", MaxScenarioDelay},
		{ScenarioDeferred, "", 5 * time.Minute},
		{ScenarioSoftBounce, "", 10 * time.Second},
		{TestComplained, "10m", 10 * time.Minute},
		{TestComplained, "signup-42", ComplaintDelay},
		{ScenarioOpened, "0s", 10 * time.Second},
		{ScenarioOpened, "+5s", 10 * time.Second},
		{ScenarioOpened, "-5s", 10 * time.Second},
		{ScenarioOpened, "5d", 10 * time.Second},
	} {
		if got := scenarioDelay(tt.kind, tt.label); got != tt.want {
			t.Errorf("scenarioDelay(%q, %q) = %v, want %v", tt.kind, tt.label, got, tt.want)
		}
	}
}
