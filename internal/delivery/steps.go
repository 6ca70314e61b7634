package delivery

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"mailroom/internal/outbound"
)

// encodeSteps is an attempt's steps as email_attempts stores them: each
// step an array [command, ms, code, enhanced, text] cut after its last
// non-empty field, and a text equal to the attempt's stored reply written
// as 0, since the last step's usually is. A clean first try keeps about 70
// bytes instead of 160 (the objects' keys and the reply told twice).
// No steps are written as json.Marshal writes them (null, []). The bytes
// are json.Marshal's of the arrays, written out here: through []any they
// were a tenth of an outcome's allocations (profiled).
func encodeSteps(steps []outbound.Step, reply string) ([]byte, error) {
	if len(steps) == 0 {
		return json.Marshal(steps)
	}
	b := make([]byte, 0, 24*len(steps)+len(reply))
	b = append(b, '[')
	for i, s := range steps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(append(b, '['), s.Command)
		b = strconv.AppendInt(append(b, ','), s.Millis, 10)
		n := 2
		switch {
		case s.Text != "":
			n = 5
		case s.Enhanced != "":
			n = 4
		case s.Code != 0:
			n = 3
		}
		if n >= 3 {
			b = strconv.AppendInt(append(b, ','), int64(s.Code), 10)
		}
		if n >= 4 {
			b = appendJSONString(append(b, ','), s.Enhanced)
		}
		if n == 5 {
			if s.Text == reply {
				b = append(b, ",0"...)
			} else {
				b = appendJSONString(append(b, ','), s.Text)
			}
		}
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// appendJSONString appends s as json.Marshal writes a string: as it is
// between quotes when it is printable ASCII with nothing to escape (what
// SMTP replies are), else by json.Marshal itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
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
