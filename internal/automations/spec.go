package automations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	goyaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/rules"
	"mailroom/internal/sending"
)

// Limits of a definition. They bound the time and memory one save can take:
// the size is checked before parsing, the nesting before the parser recurses,
// and aliases are refused rather than expanded (no YAML bomb gets built).
const (
	MaxYAMLBytes = 128 << 10 // a 100-step flow is well under this
	MaxSteps     = 100       // every step counts, inside branches too
	MaxDepth     = 64        // flow brackets and block nesting before parsing
	MaxBranch    = 10        // if inside if
	MaxWait      = 365 * 24 * time.Hour
	maxProblems  = 50 // reported per refusal; the rest are counted
)

// Trigger events.
const (
	EventAPICall          = "api.call"
	EventTagAdded         = "tag.added"
	EventTagRemoved       = "tag.removed"
	EventContactCreated   = "contact.created"
	EventMemberSubscribed = "member.subscribed"
)

var triggerEvents = []string{EventAPICall, EventTagAdded, EventTagRemoved, EventContactCreated, EventMemberSubscribed}

// Definition is a parsed, checked automation. The YAML it came from is kept
// as written; this is only what runs need.
type Definition struct {
	Name    string
	Trigger Trigger
	Steps   []Step
}

// Trigger says what starts a run.
type Trigger struct {
	Event      string
	Tag        string // tag.added / tag.removed: only this tag
	AudienceID string // member.subscribed: only this audience
	Custom     bool   // Event names a custom event (POST /v1/events/send starts it)
	Line       int
}

// Step is one node of the flow; exactly one of the action fields is set.
type Step struct {
	ID    string // as written, or derived from the position (steps[2] -> "s3")
	Type  string // send, wait, if, tag, set, webhook, exit
	Field string // its path in the YAML, e.g. steps[2]
	Line  int

	Send    *SendStep
	Wait    *WaitStep
	If      *IfStep
	Tag     *TagStep
	Set     map[string]any
	Webhook string
	Exit    string
}

// SendStep sends one email to the run's contact. Unless Transactional, it
// carries the contact's own unsubscribe links (headers, body, footer).
type SendStep struct {
	Template, From, Subject, Topic string
	TemplateLine, TopicLine        int
	Transactional                  bool
}

// WaitStep is a delay or a time of day (UTC).
type WaitStep struct {
	For   time.Duration
	Until string // "HH:MM"
}

// Rule is one segment rule, { field, op, value? }.
type Rule struct {
	Field, Op string
	Value     any
}

// IfStep branches on a rule, checked and evaluated by internal/rules.
type IfStep struct {
	Rule       Rule
	Set        *rules.Set
	Then, Else []Step
}

// TagStep adds and removes contact tags.
type TagStep struct{ Add, Remove []string }

// Problem is one reason a definition is refused.
type Problem struct {
	Field   string `json:"field"`
	Line    int    `json:"line"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

func (p Problem) String() string {
	where := p.Field
	if where == "" {
		where = "document"
	}
	return fmt.Sprintf("%s: %s (line %d). %s", where, p.Message, p.Line, p.Fix)
}

type checker struct {
	problems []Problem
	dropped  int
	nsteps   int
	ids      map[string]int // step id -> line first seen
	def      Definition
}

func (c *checker) add(field string, line int, fix, format string, args ...any) {
	if len(c.problems) >= maxProblems {
		c.dropped++
		return
	}
	if line < 1 {
		line = 1
	}
	c.problems = append(c.problems, Problem{Field: field, Line: line, Message: fmt.Sprintf(format, args...), Fix: fix})
}

// Parse checks a definition whole and returns it, or every problem found
// (up to 50, the last one counting the rest). It never panics and takes
// time linear in the document, which is at most MaxYAMLBytes.
func Parse(src []byte) (def Definition, problems []Problem) {
	defer func() {
		// The YAML library is outside code; whatever it does with hostile
		// input is a refusal, never a crash of the request.
		if r := recover(); r != nil {
			def, problems = Definition{}, []Problem{{Line: 1, Message: "the document could not be read as YAML",
				Fix: "Check the document with a YAML linter; write plain mappings and lists."}}
		}
	}()
	c := &checker{ids: map[string]int{}}
	c.parse(src)
	if c.dropped > 0 {
		c.problems = append(c.problems, Problem{Line: c.problems[len(c.problems)-1].Line,
			Message: fmt.Sprintf("%d more problems not listed", c.dropped), Fix: "Fix the problems above and save again to see the rest."})
	}
	return c.def, c.problems
}

func (c *checker) parse(src []byte) {
	if len(src) > MaxYAMLBytes {
		line := 1 + bytes.Count(src[:MaxYAMLBytes], []byte{'\n'})
		c.add("", line, fmt.Sprintf("Keep a definition under %d KiB (at most %d steps); split a long flow into several automations.", MaxYAMLBytes>>10, MaxSteps),
			"the document is %d bytes, over the limit of %d", len(src), MaxYAMLBytes)
		return
	}
	if len(bytes.TrimSpace(src)) == 0 {
		c.add("", 1, "Write a mapping with name, trigger and steps.", "the document is empty")
		return
	}
	if !utf8.Valid(src) {
		c.add("", lineOfInvalidUTF8(src), "Save the document as UTF-8.", "the document is not valid UTF-8")
		return
	}
	if c.prescan(src) {
		return
	}
	file, err := parser.ParseBytes(src, 0, parser.AllowDuplicateMapKey()) // reported below with their path
	if err != nil {
		c.syntax(err)
		return
	}
	docs := []*ast.DocumentNode{}
	for _, d := range file.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		c.add("", 1, "Write a mapping with name, trigger and steps.", "the document is empty")
		return
	}
	if len(docs) > 1 {
		c.add("", line(docs[1].Body), "Write one automation per document; remove the second document (after ---).", "the body holds %d YAML documents", len(docs))
		return
	}
	c.top(docs[0].Body)
}

// prescan refuses, before the parser sees them, the shapes that cost the
// parser more than their size: tab indentation (which YAML forbids and
// parsers report poorly) and nesting deeper than MaxDepth (the parser
// recurses once per level). It reports whether it found any.
func (c *checker) prescan(src []byte) bool {
	found := false
	depth, maxLine := 0, 0
	for i, ln := range bytes.Split(src, []byte{'\n'}) {
		n := i + 1
		indent := ln[:len(ln)-len(bytes.TrimLeft(ln, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 {
			c.add("", n, "Indent with spaces; YAML does not allow tabs for indentation.", "line %d is indented with a tab", n)
			found = true
		}
		// Block nesting: each "- " or "key:" level adds columns; bound the
		// indentation itself, and flow brackets outside quotes.
		if len(indent) > 2*MaxDepth || bytes.Count(leadingDashes(ln), []byte{'-'}) > MaxDepth {
			if maxLine == 0 {
				maxLine = n
			}
		}
		inS, inD := false, false
		for j := 0; j < len(ln); j++ {
			ch := ln[j]
			switch {
			case inD:
				if ch == '\\' {
					j++
				} else if ch == '"' {
					inD = false
				}
			case inS:
				if ch == '\'' {
					inS = false
				}
			case ch == '#' && (j == 0 || ln[j-1] == ' ' || ln[j-1] == '\t'):
				j = len(ln)
			case ch == '"':
				inD = true
			case ch == '\'':
				inS = j == 0 || strings.IndexByte(" [{,:-", ln[j-1]) >= 0
			case ch == '[' || ch == '{':
				depth++
				if depth > MaxDepth && maxLine == 0 {
					maxLine = n
				}
			case ch == ']' || ch == '}':
				if depth > 0 {
					depth--
				}
			}
		}
	}
	if maxLine > 0 {
		c.add("", maxLine, fmt.Sprintf("Keep nesting under %d levels; an if inside an if goes %d deep at most.", MaxDepth, MaxBranch), "the document nests deeper than %d levels", MaxDepth)
		found = true
	}
	return found
}

func leadingDashes(ln []byte) []byte {
	i := 0
	for i < len(ln) && (ln[i] == '-' || ln[i] == ' ') {
		i++
	}
	return ln[:i]
}

func lineOfInvalidUTF8(src []byte) int {
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			return 1 + bytes.Count(src[:i], []byte{'\n'})
		}
		i += size
	}
	return 1
}

func (c *checker) syntax(err error) {
	ln := 1
	msg := err.Error()
	var se *goyaml.SyntaxError
	if errors.As(err, &se) {
		msg = se.Message
		if se.Token != nil && se.Token.Position != nil {
			ln = se.Token.Position.Line
		}
	}
	fix := "Check the indentation and quoting on that line; quote values holding ': ' or ' #'."
	if strings.Contains(msg, "duplicate") || strings.Contains(msg, "already defined") {
		fix = "Give each key once per mapping; merge the two entries."
	}
	c.add("", ln, fix, "the YAML does not parse: %s", firstLine(msg))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// line is the 1-based line a node starts on.
func line(n ast.Node) int {
	if n == nil {
		return 1
	}
	if t := n.GetToken(); t != nil && t.Position != nil {
		return t.Position.Line
	}
	return 1
}

// unwrap steps through explicit tags (!!str x) and reports anchors,
// aliases and merge keys, which are refused: expanding them is what a YAML
// bomb needs, and a reference back to an enclosing anchor is the only way a
// flow written in this schema could loop.
func (c *checker) unwrap(field string, n ast.Node) (ast.Node, bool) {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
			continue
		case *ast.AnchorNode:
			c.add(field, line(n), "Write the value out in full instead of using &anchors and *aliases.", "YAML anchors (&%s) are not accepted", nodeText(v.Name))
			return nil, false
		case *ast.AliasNode:
			c.add(field, line(n), "Write the value out in full; a branch cannot point back to another step.", "YAML aliases (*%s) are not accepted", nodeText(v.Value))
			return nil, false
		case *ast.MergeKeyNode:
			c.add(field, line(n), "Write the keys out in full instead of using <<.", "YAML merge keys (<<) are not accepted")
			return nil, false
		}
		return n, true
	}
}

func nodeText(n ast.Node) string {
	if n == nil {
		return ""
	}
	if t := n.GetToken(); t != nil {
		return t.Value
	}
	return ""
}

type pair struct {
	key   string
	kline int
	value ast.Node // nil for "key:" with nothing after it
}

// mapping reads a mapping's pairs in order, reporting duplicate keys,
// non-scalar keys and anchors. ok is false when n is not a mapping.
func (c *checker) mapping(field string, n ast.Node, what string) ([]pair, bool) {
	n, ok := c.unwrap(field, n)
	if !ok {
		return nil, false
	}
	var values []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		values = v.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{v}
	default:
		c.add(field, line(n), "Write "+what+".", "expected a mapping, found %s", kind(n))
		return nil, false
	}
	seen := map[string]int{}
	out := make([]pair, 0, len(values))
	for _, mv := range values {
		var kn ast.Node = mv.Key
		if _, isMerge := kn.(*ast.MergeKeyNode); isMerge {
			c.unwrap(field, kn)
			continue
		}
		kn, ok := c.unwrap(field, kn)
		if !ok {
			continue
		}
		key, isStr := scalarString(kn)
		if !isStr {
			c.add(field, line(kn), "Use plain text keys.", "a key must be text, found %s", kind(kn))
			continue
		}
		if first, dup := seen[key]; dup {
			c.add(join(field, key), line(kn), fmt.Sprintf("Give %q once in this mapping (first on line %d); merge the two.", key, first), "the key %q is written twice", key)
			continue
		}
		seen[key] = line(kn)
		val := mv.Value
		if _, isNull := val.(*ast.NullNode); isNull && val.GetToken() != nil && val.GetToken().Value == "" {
			val = nil
		}
		out = append(out, pair{key: key, kline: line(kn), value: val})
	}
	return out, true
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// kind names a node's type for messages.
func kind(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.StringNode, *ast.LiteralNode:
		return "text"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "true/false"
	case *ast.SequenceNode:
		return "a list"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	}
	return "another type"
}

// scalarString reads a scalar as text; numbers and booleans read as written.
func scalarString(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value != nil {
			return v.Value.Value, true
		}
		return "", true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	}
	return "", false
}

// text reads a value that must be text.
func (c *checker) text(field string, n ast.Node, fix string) (string, bool) {
	if n == nil {
		c.add(field, 0, fix, "a value is required")
		return "", false
	}
	n, ok := c.unwrap(field, n)
	if !ok {
		return "", false
	}
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		s, _ := scalarString(v)
		return s, true
	}
	c.add(field, line(n), fix, "expected text, found %s", kind(n))
	return "", false
}

// list reads a sequence.
func (c *checker) list(field string, n ast.Node, fix string) ([]ast.Node, bool) {
	if n == nil {
		c.add(field, 0, fix, "a list is required")
		return nil, false
	}
	n, ok := c.unwrap(field, n)
	if !ok {
		return nil, false
	}
	s, isSeq := n.(*ast.SequenceNode)
	if !isSeq {
		c.add(field, line(n), fix, "expected a list, found %s", kind(n))
		return nil, false
	}
	return s.Values, true
}

func (c *checker) top(body ast.Node) {
	pairs, ok := c.mapping("", body, "a mapping with name, trigger and steps")
	if !ok {
		return
	}
	var name, trig, steps *pair
	for i := range pairs {
		p := &pairs[i]
		switch p.key {
		case "name":
			name = p
		case "trigger":
			trig = p
		case "steps":
			steps = p
		default:
			c.add(p.key, p.kline, "Remove it; a definition has name, trigger and steps.", "unknown key %q", p.key)
		}
	}
	end := line(body)
	if name == nil {
		c.add("name", end, "Add name: followed by what the automation does, e.g. name: Trial onboarding.", "name is required")
	} else if s, ok := c.text("name", name.value, "Write the name as text, e.g. name: Trial onboarding."); ok {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			c.add("name", name.kline, "Write the name as text, e.g. name: Trial onboarding.", "name is empty")
		case utf8.RuneCountInString(s) > 200:
			c.add("name", name.kline, "Shorten the name to 200 characters.", "name is longer than 200 characters")
		default:
			c.def.Name = s
		}
	}
	if trig == nil {
		c.add("trigger", end, "Add trigger: with event: api.call (or tag.added, tag.removed, contact.created, member.subscribed).", "trigger is required")
	} else {
		c.trigger(trig)
	}
	if steps == nil {
		c.add("steps", end, "Add steps: with a list of 1 to 100 steps, e.g. - send: { template: welcome, from: hi@example.com }.", "steps is required")
		return
	}
	items, ok := c.list("steps", steps.value, "Write steps as a list: each step on a line starting with - .")
	if !ok {
		return
	}
	if len(items) == 0 {
		c.add("steps", steps.kline, "Add at least one step.", "steps is empty")
		return
	}
	c.def.Steps = c.steps("steps", items, 0)
}

func (c *checker) trigger(p *pair) {
	pairs, ok := c.mapping("trigger", p.value, "trigger: as a mapping with event: (and tag: or audience_id:)")
	if !ok {
		if p.value == nil {
			c.add("trigger", p.kline, "Write trigger: as a mapping with event:, e.g. trigger: { event: api.call }.", "trigger is empty")
		}
		return
	}
	t := Trigger{Line: p.kline}
	var tagP, audP *pair
	for i := range pairs {
		q := &pairs[i]
		switch q.key {
		case "event":
			if s, ok := c.text("trigger.event", q.value, "Write one of "+strings.Join(triggerEvents, ", ")+"."); ok {
				switch {
				case contains(triggerEvents, s):
					t.Event = s
				case ValidEventName(s) == nil:
					t.Event, t.Custom = s, true // a custom event: save checks that POST /v1/events defined it
				default:
					c.add("trigger.event", q.kline, "Write one of "+strings.Join(triggerEvents, ", ")+", or the name of a custom event (POST /v1/events).",
						"unknown trigger event %q", apierr.Clip(s, 60))
				}
			}
		case "tag":
			tagP = q
		case "audience_id":
			audP = q
		default:
			c.add("trigger."+q.key, q.kline, "Remove it; a trigger has event, tag (tag.added, tag.removed) and audience_id (member.subscribed).", "unknown key %q", q.key)
		}
	}
	if t.Event == "" && !c.hasProblem("trigger.event") {
		c.add("trigger.event", p.kline, "Add event: with one of "+strings.Join(triggerEvents, ", ")+".", "trigger.event is required")
	}
	if tagP != nil {
		if t.Event != "" && t.Event != EventTagAdded && t.Event != EventTagRemoved {
			c.add("trigger.tag", tagP.kline, "Remove tag:, or use event: tag.added or tag.removed.", "tag applies only to tag.added and tag.removed triggers")
		} else if s, ok := c.text("trigger.tag", tagP.value, "Write the tag as text, e.g. tag: trial."); ok {
			if n, err := contacts.NormalizeTag(s); err != nil {
				c.add("trigger.tag", tagP.kline, "Write a tag of 1 to 64 characters without commas or line breaks.", "%q cannot be a tag", apierr.Clip(s, 60))
			} else {
				t.Tag = n
			}
		}
	}
	if audP != nil {
		if t.Event != "" && t.Event != EventMemberSubscribed {
			c.add("trigger.audience_id", audP.kline, "Remove audience_id:, or use event: member.subscribed.", "audience_id applies only to member.subscribed triggers")
		} else if s, ok := c.text("trigger.audience_id", audP.value, "Write the audience id, e.g. audience_id: aud_..."); ok {
			t.AudienceID = strings.TrimSpace(s)
		}
	}
	c.def.Trigger = t
}

func (c *checker) hasProblem(field string) bool {
	for _, p := range c.problems {
		if p.Field == field {
			return true
		}
	}
	return false
}

var stepTypes = []string{"send", "wait", "if", "tag", "set", "webhook", "exit"}

func (c *checker) steps(field string, items []ast.Node, depth int) []Step {
	out := make([]Step, 0, len(items))
	for i, it := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		c.nsteps++
		if c.nsteps == MaxSteps+1 {
			c.add(f, line(it), fmt.Sprintf("Keep a flow to %d steps, branches included; split it into several automations.", MaxSteps),
				"the flow has more than %d steps", MaxSteps)
		}
		if c.nsteps > MaxSteps {
			continue
		}
		if s, ok := c.step(f, it, depth); ok {
			out = append(out, s)
		}
	}
	return out
}

func (c *checker) step(field string, n ast.Node, depth int) (Step, bool) {
	st := Step{Field: field, Line: line(n)}
	pairs, ok := c.mapping(field, n, "a step as a mapping with one of "+strings.Join(stepTypes, ", "))
	if !ok {
		return st, false
	}
	var action *pair
	var then, els, id *pair
	for i := range pairs {
		p := &pairs[i]
		switch {
		case contains(stepTypes, p.key):
			if action != nil {
				c.add(join(field, p.key), p.kline, "Put "+p.key+" in a step of its own (a new - item).", "a step does one thing; it already has %s", action.key)
				continue
			}
			action = p
		case p.key == "then":
			then = p
		case p.key == "else":
			els = p
		case p.key == "id":
			id = p
		default:
			c.add(join(field, p.key), p.kline, "Use one of "+strings.Join(stepTypes, ", ")+" (and id:).", "unknown step key %q", p.key)
		}
	}
	if id != nil {
		if s, ok := c.text(field+".id", id.value, "Write the id as text, e.g. id: welcome."); ok {
			s = strings.TrimSpace(s)
			switch {
			case !stepID.MatchString(s):
				c.add(field+".id", id.kline, "Use 1 to 64 letters, digits, - or _.", "%q is not a step id", apierr.Clip(s, 60))
			case c.ids[s] != 0:
				c.add(field+".id", id.kline, fmt.Sprintf("Give each step its own id (%q is used on line %d).", s, c.ids[s]), "the id %q is used twice", s)
			default:
				c.ids[s] = id.kline
				st.ID = s
			}
		}
	}
	if action == nil {
		c.add(field, st.Line, "Give the step one of "+strings.Join(stepTypes, ", ")+".", "the step has no action")
		return st, false
	}
	st.Type = action.key
	if action.key != "if" {
		for _, b := range []*pair{then, els} {
			if b != nil {
				c.add(join(field, b.key), b.kline, "Use then/else only with if.", "%s belongs to an if step", b.key)
			}
		}
	}
	f := join(field, action.key)
	v := action.value
	switch action.key {
	case "send":
		st.Send, ok = c.send(f, action)
	case "wait":
		st.Wait, ok = c.wait(f, action)
	case "if":
		if depth+1 > MaxBranch {
			c.add(f, action.kline, fmt.Sprintf("Nest if steps at most %d deep.", MaxBranch), "if nested too deep")
			return st, false
		}
		st.If, ok = c.ifStep(f, action)
		if ok {
			if then != nil {
				if items, lok := c.list(field+".then", then.value, "Write then: as a list of steps."); lok {
					st.If.Then = c.steps(field+".then", items, depth+1)
				}
			}
			if els != nil {
				if items, lok := c.list(field+".else", els.value, "Write else: as a list of steps."); lok {
					st.If.Else = c.steps(field+".else", items, depth+1)
				}
			}
		}
	case "tag":
		st.Tag, ok = c.tag(f, action)
	case "set":
		st.Set, ok = c.set(f, action)
	case "webhook":
		st.Webhook, ok = c.webhook(f, action)
	case "exit":
		ok = true
		if v != nil {
			st.Exit, ok = c.text(f, v, "Write the reason as text, e.g. exit: lost-interest, or leave it empty.")
		}
	}
	return st, ok
}

var stepID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (c *checker) send(f string, p *pair) (*SendStep, bool) {
	fix := "Write send: { template: <id or slug>, from: <address> }."
	pairs, ok := c.mapping(f, p.value, "send: as a mapping with template and from")
	if !ok {
		if p.value == nil {
			c.add(f, p.kline, fix, "send is empty")
		}
		return nil, false
	}
	s := &SendStep{}
	good := true
	seen := map[string]bool{}
	for _, q := range pairs {
		g := join(f, q.key)
		seen[q.key] = true
		switch q.key {
		case "template":
			v, ok := c.text(g, q.value, "Write the template's id or slug, e.g. template: welcome.")
			if ok && strings.TrimSpace(v) == "" {
				c.add(g, q.kline, "Write the template's id or slug, e.g. template: welcome.", "template is empty")
				ok = false
			}
			s.Template, s.TemplateLine, good = strings.TrimSpace(v), q.kline, good && ok
		case "from":
			v, ok := c.text(g, q.value, "Write the sender, e.g. from: Acme <hi@acme.test>.")
			if ok {
				if _, err := sending.ParseAddress(v); err != nil {
					c.add(g, q.kline, "Write the sender as an address or Name <address>, e.g. from: Acme <hi@acme.test>.", "%q is not an address", apierr.Clip(v, 60))
					ok = false
				}
			}
			s.From, good = v, good && ok
		case "subject":
			v, ok := c.text(g, q.value, "Write the subject as text; quote it if it holds ': '.")
			s.Subject, good = v, good && ok
		case "topic":
			v, ok := c.text(g, q.value, "Write the topic's key or id, e.g. topic: product-news.")
			if ok && !topicRef.MatchString(v) {
				c.add(g, q.kline, "Write the topic's key (at least 2 characters: letters, digits, - _ .) or its id.", "%q cannot be a topic key", apierr.Clip(v, 60))
				ok = false
			}
			s.Topic, s.TopicLine, good = v, q.kline, good && ok
		case "transactional":
			v, ok := c.unwrap(g, q.value)
			b, isBool := v.(*ast.BoolNode)
			if ok && !isBool {
				c.add(g, q.kline, "Write transactional: true for a receipt or a password reset (no unsubscribe link), or leave it out.", "expected true or false, found %s", kind(v))
			}
			if ok && isBool {
				s.Transactional = b.Value
			}
			good = good && ok && isBool
		default:
			c.add(g, q.kline, "Remove it; send takes template, from, subject, topic and transactional.", "unknown key %q", q.key)
			good = false
		}
	}
	if s.Transactional && s.Topic != "" {
		c.add(join(f, "transactional"), p.kline, "Remove topic (a transactional send has no opt-out) or transactional.", "a send under a topic is marketing mail; it cannot be transactional")
		good = false
	}
	for _, req := range []string{"template", "from"} {
		if !seen[req] {
			c.add(join(f, req), p.kline, fix, "%s is required", req)
			good = false
		}
	}
	return s, good
}

// topicRef is the syntax of a topic key or id. Topics are another area's;
// whether the topic exists is checked when the send runs (decisions.md).
var topicRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{1,63}$`)

var durationPart = regexp.MustCompile(`^([0-9]+)([smhd])`)

// ParseWait reads a wait duration: a positive whole number and a unit (s,
// m, h, d), possibly chained (1h30m), at most 365 days.
func ParseWait(s string) (time.Duration, error) {
	rest := strings.TrimSpace(s)
	if rest == "" {
		return 0, errors.New("empty")
	}
	var total time.Duration
	for rest != "" {
		m := durationPart.FindStringSubmatch(rest)
		if m == nil {
			return 0, errors.New("not a duration")
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n > 365*24*3600 {
			return 0, errors.New("too long")
		}
		unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
		total += time.Duration(n) * unit
		if total > MaxWait {
			return 0, errors.New("too long")
		}
		rest = rest[len(m[0]):]
	}
	if total <= 0 {
		return 0, errors.New("zero")
	}
	return total, nil
}

var timeOfDay = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

func (c *checker) wait(f string, p *pair) (*WaitStep, bool) {
	fix := "Write a number and a unit: 30s, 15m, 2h or 2d (or until: \"09:00\" in UTC)."
	if p.value == nil {
		c.add(f, p.kline, fix, "wait is empty")
		return nil, false
	}
	n, ok := c.unwrap(f, p.value)
	if !ok {
		return nil, false
	}
	switch v := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		pairs, _ := c.mapping(f, v, "wait: { until: \"09:00\" }")
		w := &WaitStep{}
		good := true
		for _, q := range pairs {
			if q.key != "until" {
				c.add(join(f, q.key), q.kline, "A wait mapping holds only until: \"HH:MM\" (UTC).", "unknown key %q", q.key)
				good = false
				continue
			}
			s, ok := c.text(f+".until", q.value, "Write the time of day in UTC as \"HH:MM\", quoted, e.g. until: \"09:00\".")
			if ok && !timeOfDay.MatchString(s) {
				c.add(f+".until", q.kline, "Write the time of day in UTC as \"HH:MM\", quoted, e.g. until: \"09:00\".", "%q is not a time of day", apierr.Clip(s, 60))
				ok = false
			}
			w.Until, good = s, good && ok
		}
		if w.Until == "" && good {
			c.add(f+".until", p.kline, "Write wait: { until: \"09:00\" } or wait: 2d.", "until is required")
			good = false
		}
		return w, good
	case *ast.IntegerNode, *ast.FloatNode:
		c.add(f, line(n), "Add a unit: "+v.GetToken().Value+"s, "+v.GetToken().Value+"m, "+v.GetToken().Value+"h or "+v.GetToken().Value+"d.", "%s has no unit", v.GetToken().Value)
		return nil, false
	case *ast.StringNode:
		d, err := ParseWait(v.Value)
		if err == nil {
			return &WaitStep{For: d}, true
		}
		s := strings.TrimSpace(v.Value)
		switch {
		case strings.HasPrefix(s, "-") || err.Error() == "zero":
			c.add(f, line(n), "A wait is positive: write e.g. 1h.", "%q is not a positive duration", apierr.Clip(s, 60))
		case err.Error() == "too long":
			c.add(f, line(n), "Wait at most 365d.", "%q is longer than 365 days", apierr.Clip(s, 60))
		default:
			c.add(f, line(n), suggestWait(s, fix), "%q is not a duration", apierr.Clip(s, 60))
		}
		return nil, false
	}
	c.add(f, line(n), fix, "expected a duration, found %s", kind(n))
	return nil, false
}

var spelled = regexp.MustCompile(`^([0-9]+)\s*(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)$`)

// suggestWait turns "2 days" into "Write 2d." when it can.
func suggestWait(s, fix string) string {
	if m := spelled.FindStringSubmatch(strings.ToLower(s)); m != nil {
		return fmt.Sprintf("Write %s%s: a number and one of s, m, h, d, without a space.", m[1], m[2][:1])
	}
	return fix
}

func (c *checker) ifStep(f string, p *pair) (*IfStep, bool) {
	fix := "Write if: { field: attributes.plan, op: eq, value: pro } (a segment rule)."
	pairs, ok := c.mapping(f, p.value, "if: as a segment rule { field, op, value }")
	if !ok {
		if p.value == nil {
			c.add(f, p.kline, fix, "if is empty")
		}
		return nil, false
	}
	r := Rule{}
	good := true
	var opLine, valLine int
	hasValue := false
	for _, q := range pairs {
		g := join(f, q.key)
		switch q.key {
		case "field":
			s, ok := c.text(g, q.value, fix)
			r.Field, good = s, good && ok
		case "op":
			s, ok := c.text(g, q.value, fix)
			r.Op, opLine, good = s, q.kline, good && ok
		case "value":
			hasValue, valLine = true, q.kline
			v, ok := c.value(g, q.value, 0)
			r.Value, good = v, good && ok
		default:
			c.add(g, q.kline, "Remove it; a rule has field, op and value.", "unknown key %q", q.key)
			good = false
		}
	}
	if !good {
		return nil, false
	}
	if r.Field == "" {
		c.add(f+".field", p.kline, fix, "field is required")
		return nil, false
	}
	if r.Op == "" {
		c.add(f+".op", p.kline, fix, "op is required")
		return nil, false
	}
	// The segment rule evaluator checks the rule, as it does a segment's:
	// one evaluator, one set of fields and ops. status and joined_at need
	// a membership, which only a member.subscribed run has.
	rule := rules.Rule{Field: r.Field, Op: r.Op}
	if hasValue && r.Value != nil {
		raw, err := json.Marshal(r.Value)
		if err != nil {
			c.add(f+".value", valLine, "Use text, a number, true/false or a list.", "the value cannot be read")
			return nil, false
		}
		rule.Value = raw
	}
	set, err := rules.Parse(rules.All, []rules.Rule{rule}, c.def.Trigger.Event == EventMemberSubscribed)
	if err != nil {
		msg, next := err.Error(), fix
		if ae, ok := apierr.As(err); ok {
			msg = strings.TrimPrefix(ae.Message, "rules[0]: ")
			if ae.Next != "" {
				next = ae.Next
			}
		}
		at, where := opLine, f+".op"
		switch {
		case strings.Contains(msg, "take op"):
		case strings.Contains(msg, "field") || strings.Contains(msg, "attribute name"):
			at, where = p.kline, f+".field"
		case strings.Contains(msg, "value") || strings.Contains(msg, "takes"):
			at, where = valLine, f+".value"
		}
		if at == 0 {
			at = p.kline
		}
		c.add(where, at, msg+" "+next, "the rule is refused")
		return nil, false
	}
	return &IfStep{Rule: r, Set: set}, true
}

// value reads a scalar, list or mapping of scalars into plain Go values.
func (c *checker) value(f string, n ast.Node, depth int) (any, bool) {
	if n == nil {
		return nil, true
	}
	n, ok := c.unwrap(f, n)
	if !ok {
		return nil, false
	}
	if depth > 4 {
		c.add(f, line(n), "Use scalar values, lists or one level of mapping.", "the value nests too deep")
		return nil, false
	}
	switch v := n.(type) {
	case *ast.NullNode:
		return nil, true
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		s, _ := scalarString(v)
		return s, true
	case *ast.BoolNode:
		return v.Value, true
	case *ast.IntegerNode:
		return v.Value, true
	case *ast.FloatNode:
		return v.Value, true
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		good := true
		for i, e := range v.Values {
			x, ok := c.value(fmt.Sprintf("%s[%d]", f, i), e, depth+1)
			out, good = append(out, x), good && ok
		}
		return out, good
	case *ast.MappingNode, *ast.MappingValueNode:
		pairs, _ := c.mapping(f, v, "a mapping")
		out := map[string]any{}
		good := true
		for _, q := range pairs {
			x, ok := c.value(join(f, q.key), q.value, depth+1)
			out[q.key], good = x, good && ok
		}
		return out, good
	}
	c.add(f, line(n), "Use text, a number, true/false or null.", "unsupported value (%s)", kind(n))
	return nil, false
}

func (c *checker) tags(f string, n ast.Node) ([]string, bool) {
	fix := "Write a list of tags, e.g. [onboarded]."
	if n == nil {
		return nil, true
	}
	items, ok := c.list(f, n, fix)
	if !ok {
		return nil, false
	}
	out := []string{}
	good := true
	for i, it := range items {
		g := fmt.Sprintf("%s[%d]", f, i)
		s, ok := c.text(g, it, "Write the tag as text; quote it if it looks like a number.")
		if !ok {
			good = false
			continue
		}
		t, err := contacts.NormalizeTag(s)
		if err != nil {
			c.add(g, line(it), "Write a tag of 1 to 64 characters without commas or line breaks.", "%q cannot be a tag", apierr.Clip(s, 60))
			good = false
			continue
		}
		out = append(out, t)
	}
	return out, good
}

func (c *checker) tag(f string, p *pair) (*TagStep, bool) {
	fix := "Write tag: { add: [a], remove: [b] }."
	pairs, ok := c.mapping(f, p.value, "tag: { add: [...], remove: [...] }")
	if !ok {
		if p.value == nil {
			c.add(f, p.kline, fix, "tag is empty")
		}
		return nil, false
	}
	t := &TagStep{}
	good := true
	for _, q := range pairs {
		switch q.key {
		case "add":
			v, ok := c.tags(f+".add", q.value)
			t.Add, good = v, good && ok
		case "remove":
			v, ok := c.tags(f+".remove", q.value)
			t.Remove, good = v, good && ok
		default:
			c.add(join(f, q.key), q.kline, "Use add: and remove:.", "unknown key %q", q.key)
			good = false
		}
	}
	if good && len(t.Add)+len(t.Remove) == 0 {
		c.add(f, p.kline, fix, "tag adds and removes nothing")
		good = false
	}
	return t, good
}

var attrName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

func (c *checker) set(f string, p *pair) (map[string]any, bool) {
	fix := "Write set: { plan: pro } (null clears an attribute)."
	pairs, ok := c.mapping(f, p.value, "set: as a mapping of attribute names to values")
	if !ok {
		if p.value == nil {
			c.add(f, p.kline, fix, "set is empty")
		}
		return nil, false
	}
	if len(pairs) == 0 {
		c.add(f, p.kline, fix, "set changes nothing")
		return nil, false
	}
	out := map[string]any{}
	good := true
	for _, q := range pairs {
		g := join(f, q.key)
		if !attrName.MatchString(q.key) {
			c.add(g, q.kline, "Name attributes with letters, digits and _ (at most 64).", "%q is not an attribute name", apierr.Clip(q.key, 60))
			good = false
			continue
		}
		v, ok := c.value(g, q.value, 0)
		out[q.key], good = v, good && ok
	}
	return out, good
}

func (c *checker) webhook(f string, p *pair) (string, bool) {
	fix := "Write webhook: { url: https://example.com/hook }."
	pairs, ok := c.mapping(f, p.value, "webhook: { url: https://... }")
	if !ok {
		if p.value == nil {
			c.add(f, p.kline, fix, "webhook is empty")
		}
		return "", false
	}
	u := ""
	good := true
	for _, q := range pairs {
		if q.key != "url" {
			c.add(join(f, q.key), q.kline, "A webhook step holds only url:.", "unknown key %q", q.key)
			good = false
			continue
		}
		s, ok := c.text(f+".url", q.value, fix)
		if ok {
			pu, err := url.Parse(s)
			if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" || pu.User != nil {
				c.add(f+".url", q.kline, "Write an absolute http(s) URL without credentials, e.g. https://example.com/hook.", "%q is not a webhook URL", apierr.Clip(s, 60))
				ok = false
			}
		}
		u, good = s, good && ok
	}
	if u == "" && good {
		c.add(f+".url", p.kline, fix, "url is required")
		good = false
	}
	return u, good
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
