package delivery

import (
	"encoding/json"
	"fmt"
	"strings"

	"mailroom/internal/outbound"
)

// encodeSteps is an attempt's steps as email_attempts stores them: each
// step an array [command, ms, code, enhanced, text] cut after its last
// non-empty field, and a text equal to the attempt's stored reply written
// as 0, since the last step's usually is. A clean first try keeps about 70
// bytes instead of 160 (the objects' keys and the reply told twice).
// No steps are written as json.Marshal writes them (null, []).
func encodeSteps(steps []outbound.Step, reply string) ([]byte, error) {
	if len(steps) == 0 {
		return json.Marshal(steps)
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
	return json.Marshal(rows)
}

// decodeSteps reads what encodeSteps wrote, or the objects json.Marshal
// wrote before it (a row of an older version).
func decodeSteps(raw, reply string) ([]outbound.Step, error) {
	if !strings.HasPrefix(raw, "[[") {
		var steps []outbound.Step
		return steps, json.Unmarshal([]byte(raw), &steps)
	}
	var rows [][]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		return nil, err
	}
	steps := make([]outbound.Step, len(rows))
	for i, row := range rows {
		if len(row) < 2 {
			return nil, fmt.Errorf("delivery: a stored step of %d fields", len(row))
		}
		s := &steps[i]
		dest := []any{&s.Command, &s.Millis, &s.Code, &s.Enhanced, &s.Text}
		for j, f := range row[:min(len(row), len(dest))] {
			if j == 4 && string(f) == "0" {
				s.Text = reply
				continue
			}
			if err := json.Unmarshal(f, dest[j]); err != nil {
				return nil, err
			}
		}
	}
	return steps, nil
}
