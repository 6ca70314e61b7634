package automations

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"

	"mailroom/internal/apierr"
)

// The Resend SDKs' automations.create sends a step graph: steps with a key,
// a type and a config, joined by connections. FromGraph writes the graphs
// that map onto a definition (a chain from one trigger through delays and
// template sends) as its YAML, which Create then checks like any other;
// the rest is refused naming the step type.

// GraphStep is one step of a Resend graph.
type GraphStep struct {
	Key    string          `json:"key"`
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config"`
}

// GraphConnection joins two steps by key.
type GraphConnection struct {
	From string `json:"from"`
	To   string `json:"to"`
	Type string `json:"type"`
}

type triggerConfig struct {
	EventName string `json:"event_name"`
}

type delayConfig struct {
	Duration string `json:"duration"`
}

type sendEmailConfig struct {
	Template struct {
		ID        string         `json:"id"`
		Variables map[string]any `json:"variables"`
	} `json:"template"`
	Subject string `json:"subject"`
	From    string `json:"from"`
	ReplyTo string `json:"reply_to"`
	TopicID string `json:"topic_id"`
}

func errGraph(format string, args ...any) error {
	return apierr.Invalid422("unsupported_step", format, args...).
		WithNext("A Resend graph maps when it is one chain from a trigger through delay and send_email steps; write other flows as YAML (docs/automations.md).")
}

// FromGraph writes a Resend step graph as a definition's YAML.
func FromGraph(name string, steps []GraphStep, conns []GraphConnection) ([]byte, error) {
	if strings.TrimSpace(name) == "" {
		return nil, apierr.InvalidRequest("name is required.")
	}
	if len(steps) == 0 || len(steps) > MaxSteps+1 {
		return nil, apierr.InvalidRequest("steps must hold a trigger and 1 to %d steps.", MaxSteps)
	}
	byKey := map[string]int{}
	trigger := -1
	for i, st := range steps {
		switch {
		case st.Key == "":
			return nil, apierr.InvalidRequest("steps[%d].key is required.", i)
		case byKey[st.Key] != 0 || (i > 0 && steps[0].Key == st.Key):
			return nil, apierr.InvalidRequest("steps[%d].key %q is used twice.", i, apierr.Clip(st.Key, 60))
		}
		byKey[st.Key] = i + 1 // 0 is "none"
		switch st.Type {
		case "trigger":
			if trigger >= 0 {
				return nil, errGraph("steps[%d]: a second trigger; an automation starts on one.", i)
			}
			trigger = i
		case "delay", "send_email":
		case "wait_for_event", "condition", "contact_update", "contact_delete", "add_to_segment":
			return nil, errGraph("steps[%d].type %q is not offered: Mailroom's YAML has no such step to translate it to.", i, st.Type)
		default:
			return nil, apierr.InvalidRequest("steps[%d].type %q is not a step type.", i, apierr.Clip(st.Type, 60))
		}
	}
	if trigger < 0 {
		return nil, apierr.InvalidRequest("steps needs a step of type trigger.")
	}
	next := map[string]string{}
	into := map[string]bool{}
	for i, c := range conns {
		if c.Type != "" && c.Type != "default" {
			return nil, errGraph("connections[%d].type %q is not offered: only a chain of default connections translates.", i, c.Type)
		}
		if byKey[c.From] == 0 || byKey[c.To] == 0 {
			return nil, apierr.InvalidRequest("connections[%d] joins %q to %q; both must be step keys.", i, apierr.Clip(c.From, 60), apierr.Clip(c.To, 60))
		}
		if next[c.From] != "" || into[c.To] {
			return nil, errGraph("connections[%d]: step %q branches or joins; only a chain translates.", i, apierr.Clip(c.From, 60))
		}
		next[c.From], into[c.To] = c.To, true
	}
	var tc triggerConfig
	if err := json.Unmarshal(orEmpty(steps[trigger].Config), &tc); err != nil || tc.EventName == "" {
		return nil, apierr.InvalidRequest("steps[%d].config.event_name is required: the event that starts a run.", trigger)
	}
	var out []yaml.MapSlice
	seen := map[string]bool{steps[trigger].Key: true}
	for k := next[steps[trigger].Key]; k != ""; k = next[k] {
		if seen[k] {
			return nil, errGraph("connections loop back to step %q; only a chain translates.", apierr.Clip(k, 60))
		}
		seen[k] = true
		i := byKey[k] - 1
		st, err := graphStep(i, steps[i])
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	for i, st := range steps {
		if !seen[st.Key] {
			return nil, apierr.InvalidRequest("steps[%d] (%q) is not reached from the trigger by connections.", i, apierr.Clip(st.Key, 60))
		}
	}
	if len(out) == 0 {
		return nil, apierr.InvalidRequest("steps needs a step after the trigger (a delay or a send_email), joined to it by connections.")
	}
	return yaml.Marshal(yaml.MapSlice{{Key: "name", Value: name}, {Key: "trigger", Value: yaml.MapSlice{{Key: "event", Value: tc.EventName}}},
		{Key: "steps", Value: out}})
}

// graphStep is one delay or send_email step as a definition's step.
func graphStep(i int, st GraphStep) (yaml.MapSlice, error) {
	id := yaml.MapItem{Key: "id", Value: st.Key}
	switch st.Type {
	case "delay":
		var c delayConfig
		if err := json.Unmarshal(orEmpty(st.Config), &c); err != nil || c.Duration == "" {
			return nil, apierr.InvalidRequest("steps[%d].config.duration is required, e.g. \"1 hour\" or \"2d\".", i)
		}
		d, ok := waitOf(c.Duration)
		if !ok {
			return nil, apierr.InvalidRequest("steps[%d].config.duration %q is not a duration: write a number and a unit, e.g. 30 minutes, 2 hours, 1 day.", i, apierr.Clip(c.Duration, 60))
		}
		return yaml.MapSlice{id, {Key: "wait", Value: d}}, nil
	case "send_email":
		var c sendEmailConfig
		if err := json.Unmarshal(orEmpty(st.Config), &c); err != nil || c.Template.ID == "" {
			return nil, apierr.InvalidRequest("steps[%d].config.template.id is required: the template to send.", i)
		}
		if len(c.Template.Variables) > 0 {
			return nil, errGraph("steps[%d].config.template.variables is not offered: a send step renders the contact's own fields.", i)
		}
		if c.ReplyTo != "" {
			return nil, errGraph("steps[%d].config.reply_to is not offered on a send step.", i)
		}
		send := yaml.MapSlice{{Key: "template", Value: c.Template.ID}}
		if c.From != "" {
			send = append(send, yaml.MapItem{Key: "from", Value: c.From})
		}
		if c.Subject != "" {
			send = append(send, yaml.MapItem{Key: "subject", Value: c.Subject})
		}
		if c.TopicID != "" {
			send = append(send, yaml.MapItem{Key: "topic", Value: c.TopicID})
		}
		return yaml.MapSlice{id, {Key: "send", Value: send}}, nil
	}
	return nil, fmt.Errorf("automations: graph step type %q", st.Type) // FromGraph let only these through
}

func orEmpty(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

var durationWords = regexp.MustCompile(`^\s*([0-9]+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)\s*$`)

// waitOf reads a delay's duration ("1 hour", "30m", "2 days") as a wait's
// spelling ("1h"), checked by ParseWait.
func waitOf(s string) (string, bool) {
	if _, err := ParseWait(s); err == nil {
		return s, true
	}
	m := durationWords.FindStringSubmatch(strings.ToLower(s))
	if m == nil {
		return "", false
	}
	unit, n := m[2][:1], m[1]
	if unit == "w" {
		var k int
		fmt.Sscan(n, &k)
		unit, n = "d", fmt.Sprint(k*7)
	}
	w := n + unit
	_, err := ParseWait(w)
	return w, err == nil
}
