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
		"escapes": {{Command: "RCPT", Code: -1, Millis: -3, Enhanced: "<&>", Text: "tab\there \\ \u2028 é \x7f"},
			{Command: "MAIL", Code: 421, Text: "\x00\x7f"}},
	} {
		raw, err := encodeSteps(steps, reply)
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalSteps(steps, reply); string(raw) != string(want) {
			t.Errorf("%s: stored %s, json.Marshal of the arrays writes %s", name, raw, want)
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

// marshalSteps is encodeSteps as json.Marshal writes the arrays, which
// encodeSteps writes out by hand.
func marshalSteps(steps []outbound.Step, reply string) []byte {
	if len(steps) == 0 {
		b, _ := json.Marshal(steps)
		return b
	}
	rows := make([][]any, len(steps))
	for i, s := range steps {
		row := []any{s.Command, s.Millis, s.Code, s.Enhanced, s.Text}
		if s.Text == reply {
			row[4] = 0
		}
		n := 2
		switch {
		case s.Text != "":
			n = 5
		case s.Enhanced != "":
			n = 4
		case s.Code != 0:
			n = 3
		}
		rows[i] = row[:n]
	}
	b, _ := json.Marshal(rows)
	return b
}
