// Package render turns a template version (mustache subject, html and text)
// and caller-supplied variables into the parts of an email. Templates and
// variables both come from outside, so everything here is bounded: template
// size, the work a render may do, its output size and its wall time. Partials
// are refused (the library would read them from the filesystem) and the
// variables are plain JSON values, so no lambda can run.
package render

import (
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"
	"time"

	"github.com/cbroglie/mustache"

	"mailroom/internal/outbound"
)

// Limits a hostile template or variable set cannot exceed.
const (
	// MaxTemplateBytes caps each part (subject, html, text) of a template.
	MaxTemplateBytes = 512 << 10
	// MaxSubjectTemplateBytes caps the subject template.
	MaxSubjectTemplateBytes = 2048
	// MaxOutputBytes caps each rendered part.
	MaxOutputBytes = 2 << 20
	// MaxSteps caps the tags a render may visit (sections multiply them by
	// the longest list in the variables), checked before rendering.
	MaxSteps = 200_000
	// MaxDepth caps how deep sections nest (each level lengthens every
	// lookup below it).
	MaxDepth = 50
	// MaxRenderTime caps the wall time of one render.
	MaxRenderTime = 250 * time.Millisecond
)

// ErrTooMuchWork is wrapped by the errors of a render refused by a limit.
var ErrTooMuchWork = errors.New("render: limit reached")

// Template is a compiled template version.
type Template struct {
	subject, html, text *mustache.Template
	tags                []mustache.Tag // every part's top-level tags
	defaulted           map[string]int // the uses of each name with | default
	htmlLen, textLen    int            // source sizes: the output is about as long
	// htmlTail is the html source from its last </body> on: a render that
	// ends with it has its footer written right before it (RenderForSendWith).
	htmlTail string
}

// Parse compiles the three parts; an empty part stays empty. The error
// names the part and the line.
func Parse(subject, htmlSrc, text string) (*Template, error) {
	if len(subject) > MaxSubjectTemplateBytes {
		return nil, fmt.Errorf("subject is %d bytes; at most %d are allowed", len(subject), MaxSubjectTemplateBytes)
	}
	t := &Template{defaulted: map[string]int{}}
	for _, p := range []struct {
		name string
		src  string
		out  **mustache.Template
		raw  bool
	}{{"subject", subject, &t.subject, true}, {"html", htmlSrc, &t.html, false}, {"text", text, &t.text, true}} {
		if len(p.src) > MaxTemplateBytes {
			return nil, fmt.Errorf("%s is %d bytes; at most %d are allowed", p.name, len(p.src), MaxTemplateBytes)
		}
		if p.src == "" {
			continue
		}
		src, err := translateTags(p.src)
		if err == nil {
			src, err = translateDefaults(src, t.defaulted)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s", p.name, err)
		}
		m, err := mustache.ParseStringPartialsRaw(src, noPartials{}, p.raw)
		if err != nil {
			return nil, fmt.Errorf("%s does not parse: %s", p.name, err)
		}
		if name, ok := findPartial(m.Tags()); ok {
			return nil, fmt.Errorf("%s uses the partial {{> %s}}; partials are not supported", p.name, name)
		}
		if d := depth(m.Tags()); d > MaxDepth {
			return nil, fmt.Errorf("%s nests sections %d deep; at most %d are allowed", p.name, d, MaxDepth)
		}
		*p.out = m
		if p.out == &t.html {
			if i := lastBodyClose(src); i >= 0 {
				t.htmlTail = src[i:]
			}
		}
		t.tags = append(t.tags, m.Tags()...)
	}
	t.htmlLen, t.textLen = len(htmlSrc), len(text)
	return t, nil
}

// HasHTML and HasText say which bodies the template has.
func (t *Template) HasHTML() bool { return t.html != nil }
func (t *Template) HasText() bool { return t.text != nil }

// Names lists the variable and section names used at the top level of the
// template (outside sections), first use first: what a caller must give.
// A name used only with | default is not one.
func (t *Template) Names() []string {
	var out []string
	seen := map[string]bool{}
	uses := map[string]int{}
	for _, tag := range t.tags {
		uses[tag.Name()]++
	}
	for _, tag := range t.tags {
		if d := t.defaulted[tag.Name()]; d > 0 && uses[tag.Name()] == 2*d {
			continue // each default is a section and an inverted one
		}
		if tag.Type() == mustache.Partial {
			continue
		}
		n := tag.Name()
		if i := strings.IndexByte(n, '.'); i > 0 {
			n = n[:i]
		}
		if n != "." && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Output is a rendered template.
type Output struct {
	Subject   string
	HTML      string // with the preheader hidden at the top of the body
	Text      string // the text part, or derived from HTML when the template has none
	Preheader string
}

// Render fills the template with vars (JSON values: strings, numbers,
// booleans, objects and lists). Values are HTML-escaped in the html part
// only ({{{ }}} writes them raw); the subject and preheader lose control
// characters (CR/LF never reach a header). preheader is itself mustache.
func (t *Template) Render(vars map[string]any, preheader string) (Output, error) {
	return t.render(vars, preheader, true, Footer{})
}

// RenderForSend is Render without deriving a text part from the html when
// the template has none: the delivery engine derives it when it builds the
// message (outbound.Build, the same converter), so acceptance skips the work.
func (t *Template) RenderForSend(vars map[string]any) (Output, error) {
	return t.render(vars, "", false, Footer{})
}

// RenderForSendWith is RenderForSend with footer f added as f.AddTo adds
// it, but written into each part as it renders: a broadcast's recipient
// costs no second copy of its body.
func (t *Template) RenderForSendWith(vars map[string]any, f Footer) (Output, error) {
	return t.render(vars, "", false, f)
}

// RenderBodyWith is RenderForSendWith without the subject (Output.Subject
// stays empty), with the same checks: a broadcast's body rendered at
// delivery, whose subject the fan-out rendered and stored with the email.
func (t *Template) RenderBodyWith(vars map[string]any, f Footer) (Output, error) {
	return t.renderParts(vars, "", false, f, false)
}

// Subject renders the subject alone, with the checks Render makes before
// it: a broadcast's fan-out learns who can be rendered from it, and the
// body it does not store is rendered when the message is sent.
func (t *Template) Subject(vars map[string]any) (string, error) {
	if vars == nil {
		vars = map[string]any{}
	}
	return t.subjectBy(vars, time.Now().Add(MaxRenderTime))
}

func (t *Template) subjectBy(vars map[string]any, deadline time.Time) (string, error) {
	if err := t.checkSteps(vars); err != nil {
		return "", err
	}
	s, err := run(t.subject, vars, deadline, MaxSubjectTemplateBytes*4, 0, nil)
	if err != nil {
		return "", fmt.Errorf("subject: %w", err)
	}
	return oneLine(s), nil
}

// checkSteps refuses vars whose lists would make a render of the template
// visit more than MaxSteps tags: checked before any part renders.
func (t *Template) checkSteps(vars map[string]any) error {
	if steps := t.steps(maxListLen(vars, 0)); steps > MaxSteps {
		return fmt.Errorf("%w: the template's sections over the given lists need %d steps; at most %d are allowed", ErrTooMuchWork, steps, MaxSteps)
	}
	return nil
}

func (t *Template) render(vars map[string]any, preheader string, deriveText bool, f Footer) (Output, error) {
	return t.renderParts(vars, preheader, deriveText, f, true)
}

func (t *Template) renderParts(vars map[string]any, preheader string, deriveText bool, f Footer, subject bool) (Output, error) {
	if vars == nil {
		vars = map[string]any{}
	}
	deadline := time.Now().Add(MaxRenderTime)
	var out Output
	var err error
	if subject {
		out.Subject, err = t.subjectBy(vars, deadline)
	} else {
		err = t.checkSteps(vars)
	}
	if err != nil {
		return Output{}, err
	}
	if out.HTML, err = run(t.html, vars, deadline, MaxOutputBytes, t.htmlLen, htmlFooter(f.HTML, t.htmlTail)); err != nil {
		return Output{}, fmt.Errorf("html: %w", err)
	}
	if out.Text, err = run(t.text, vars, deadline, MaxOutputBytes, t.textLen, textFooter(f.Text)); err != nil {
		return Output{}, fmt.Errorf("text: %w", err)
	}
	if deriveText && t.text == nil && t.html != nil {
		out.Text = outbound.HTMLToText(out.HTML)
	}
	if preheader != "" {
		if len(preheader) > MaxSubjectTemplateBytes {
			return Output{}, fmt.Errorf("preheader is %d bytes; at most %d are allowed", len(preheader), MaxSubjectTemplateBytes)
		}
		p, err := mustache.ParseStringPartialsRaw(preheader, noPartials{}, true)
		if err != nil {
			return Output{}, fmt.Errorf("preheader does not parse: %s", err)
		}
		if _, ok := findPartial(p.Tags()); ok {
			return Output{}, fmt.Errorf("preheader uses a partial; partials are not supported")
		}
		if out.Preheader, err = run(p, vars, deadline, MaxSubjectTemplateBytes*4, 0, nil); err != nil {
			return Output{}, fmt.Errorf("preheader: %w", err)
		}
		out.Preheader = oneLine(out.Preheader)
		if t.html != nil {
			out.HTML = withPreheader(out.HTML, out.Preheader)
		}
	}
	return out, nil
}

// run renders m into one buffer of about size bytes; end, when not nil,
// adds the footer to a non-empty output in that buffer.
func run(m *mustache.Template, vars map[string]any, deadline time.Time, limit, size int, end *footerEnd) (string, error) {
	if m == nil {
		return "", nil
	}
	w := &capped{limit: limit, deadline: deadline}
	if end != nil {
		w.tail = end.tail
	}
	w.b.Grow(min(size+size/8+64, limit) + len(end.text()))
	if err := m.FRender(w, vars); err != nil {
		return "", err
	}
	if w.err != nil { // the library drops some write errors
		return "", w.err
	}
	switch {
	case end == nil:
	case w.held:
		// The output ends with the tail, which begins with the last
		// </body>: the footer goes right before it.
		w.b.WriteString(end.footer)
		w.b.WriteString(w.tail)
	case end.html:
		return withHTMLFooter(w.b.String(), end.footer), nil // a copy, as AddTo makes
	case w.b.Len() > 0:
		w.b.WriteString(end.footer)
	}
	return w.b.String(), nil
}

// footerEnd says where run adds a footer: before the output's last
// </body> (html), else at its end. tail is the html template's source from
// its last </body>: a render that ends with it has its last </body> there,
// so the footer is written before it without searching or copying.
type footerEnd struct {
	footer, tail string
	html         bool
}

func htmlFooter(footer, tail string) *footerEnd {
	if footer == "" {
		return nil
	}
	return &footerEnd{footer: footer, tail: tail, html: true}
}

func textFooter(footer string) *footerEnd {
	if footer == "" {
		return nil
	}
	return &footerEnd{footer: footer}
}

func (e *footerEnd) text() string {
	if e == nil {
		return ""
	}
	return e.footer
}

// capped is the render's writer: it refuses to grow past limit or to keep
// writing past the deadline, which stops the render with that error. A
// write that ends with tail has the tail held back (held) until the next
// write: once the render is done, run writes the footer before it.
type capped struct {
	b        strings.Builder
	limit    int
	deadline time.Time
	writes   int
	err      error // sticky: once refused, every later write is too
	tail     string
	held     bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	held := 0
	if c.held {
		held = len(c.tail)
	}
	if c.b.Len()+held+len(p) > c.limit {
		c.err = fmt.Errorf("%w: the output is over %d bytes", ErrTooMuchWork, c.limit)
		return 0, c.err
	}
	c.writes++
	if c.writes%256 == 0 && time.Now().After(c.deadline) {
		c.err = fmt.Errorf("%w: rendering took over %s", ErrTooMuchWork, MaxRenderTime)
		return 0, c.err
	}
	if c.held {
		c.b.WriteString(c.tail)
		c.held = false
	}
	if t := len(c.tail); t > 0 && len(p) >= t && string(p[len(p)-t:]) == c.tail {
		c.b.Write(p[:len(p)-t])
		c.held = true
		return len(p), nil
	}
	return c.b.Write(p)
}

// steps bounds the tags a render visits: a section runs its body at most
// once per element of the longest list in the variables.
func (t *Template) steps(maxList int) int {
	return countSteps(t.tags, max(maxList, 1))
}

func countSteps(tags []mustache.Tag, mult int) int {
	n := 0
	for _, tag := range tags {
		n++
		if tag.Type() == mustache.Section {
			n += mult * countSteps(tag.Tags(), mult)
		} else if tag.Type() == mustache.InvertedSection {
			n += countSteps(tag.Tags(), mult)
		}
		if n > MaxSteps {
			return n // saturate: deep nesting must not overflow
		}
	}
	return n
}

// maxListLen is the length of the longest list anywhere in v.
func maxListLen(v any, depth int) int {
	if depth > 64 {
		return 0
	}
	m := 0
	switch x := v.(type) {
	case []any:
		m = len(x)
		for _, e := range x {
			m = max(m, maxListLen(e, depth+1))
		}
	case map[string]any:
		for _, e := range x {
			m = max(m, maxListLen(e, depth+1))
		}
	}
	return m
}

// depth is how deep sections nest in tags (stopping once past MaxDepth).
func depth(tags []mustache.Tag) int {
	d := 0
	for _, tag := range tags {
		if tag.Type() == mustache.Section || tag.Type() == mustache.InvertedSection {
			d = max(d, 1+depth(tag.Tags()))
			if d > MaxDepth {
				return d
			}
		}
	}
	return d
}

// SubjectShowsLinks says whether the subject names a personal link
// anywhere (in a section too): only then does the fan-out, which renders
// subjects alone, make each member's links.
func (t *Template) SubjectShowsLinks() bool {
	return t.subject != nil && namesLink(t.subject.Tags())
}

func namesLink(tags []mustache.Tag) bool {
	for _, tag := range tags {
		root, _, _ := strings.Cut(tag.Name(), ".")
		if root == UnsubscribeURL || root == PreferencesURL {
			return true
		}
		if (tag.Type() == mustache.Section || tag.Type() == mustache.InvertedSection) && namesLink(tag.Tags()) {
			return true
		}
	}
	return false
}

func findPartial(tags []mustache.Tag) (string, bool) {
	for _, tag := range tags {
		if tag.Type() == mustache.Partial {
			return tag.Name(), true
		}
		if tag.Type() == mustache.Section || tag.Type() == mustache.InvertedSection {
			if n, ok := findPartial(tag.Tags()); ok {
				return n, true
			}
		}
	}
	return "", false
}

// noPartials answers every partial with an error: nothing is ever read
// from the filesystem.
type noPartials struct{}

func (noPartials) Get(name string) (string, error) {
	return "", fmt.Errorf("partials are not supported (%q)", name)
}

// oneLine replaces control characters (CR, LF, tabs and the rest) with
// spaces, so a rendered subject stays one header line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

var bodyTag = regexp.MustCompile(`(?i)<body\b[^>]*>`)

// withPreheader hides the preheader at the top of the body, where mail
// clients read their inbox preview from.
func withPreheader(doc, preheader string) string {
	div := `<div style="display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all" aria-hidden="true">` +
		html.EscapeString(preheader) + `</div>`
	if loc := bodyTag.FindStringIndex(doc); loc != nil {
		return doc[:loc[1]] + div + doc[loc[1]:]
	}
	return div + doc
}
