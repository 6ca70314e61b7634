package delivery

import (
	"encoding/json"
	"reflect"
	"testing"

	"mailroom/internal/outbound"
)

// The compact steps read back as the steps written, and as what the
// objects json.Marshal wrote before read back; a clean first try is short.
func TestStepsRoundTrip(t *testing.T) {
	const reply = "2.0.0 OK: queued"
	clean := []outbound.Step{{Command: "CONNECT", Millis: 2}, {Command: "MAIL", Code: 250, Millis: 1}, {Command: "RCPT", Code: 250}, {Command: "BDAT", Code: 250, Text: reply}}
	for name, steps := range map[string][]outbound.Step{
		"none":  nil,
		"empty": {},
		"clean": clean,
		"refused": {{Command: "CONNECT", Millis: 30}, {Command: "MAIL", Code: 250, Text: "ok"},
			{Command: "RCPT", Code: 550, Enhanced: "5.1.1", Text: "no such user", Millis: 4}},
		"enhanced, no text": {{Command: "RCPT", Code: 452, Enhanced: "4.2.2"}},
		"odd texts":         {{Command: "DATA", Code: 354, Text: "0"}, {Command: "DATA", Text: "[[\"x\""}, {Command: "QUIT", Enhanced: "", Text: reply}},
	} {
		raw, err := encodeSteps(steps, reply)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeSteps(string(raw), reply)
		if err != nil || !reflect.DeepEqual(got, steps) {
			t.Errorf("%s: stored %s, read %#v (%v), want %#v", name, raw, got, err, steps)
		}
		old, _ := json.Marshal(steps)
		if got, err := decodeSteps(string(old), reply); err != nil || !reflect.DeepEqual(got, steps) {
			t.Errorf("%s: an older row %s read %#v (%v)", name, old, got, err)
		}
		if name == "clean" && len(raw) > 80 {
			t.Errorf("a clean first try stores %d bytes of steps: %s", len(raw), raw)
		}
	}
}
