package render

import (
	"fmt"
	"regexp"
	"strings"
)

// withDefault is {{ name | default: "text" }} (or 'text', or {{{ … }}}): the
// value, or the text when the value is missing, empty or false.
var withDefault = regexp.MustCompile(`\{\{(\{?)\s*([A-Za-z0-9_][A-Za-z0-9_.\-]*)\s*\|\s*default\s*:\s*(?:"([^"{}\n]*)"|'([^'{}\n]*)')\s*\}?\}\}`)

// anyPipe is a variable tag with a | left after the defaults were read: a
// filter Mailroom does not have (comments {{! … }} may hold one).
var anyPipe = regexp.MustCompile(`\{\{\{?\s*[^!={}\s][^{}\n]*\|[^{}\n]*\}\}`)

// translateDefaults writes each default as the mustache sections it means,
// {{#name}}{{ name }}{{/name}}{{^name}}text{{/name}}: the text is the
// template's own, written as is. Any other filter is an error naming its
// line. Both regexps are RE2, linear in the source.
// Each use is counted in defaulted (which may be nil).
func translateDefaults(src string, defaulted map[string]int) (string, error) {
	if !strings.Contains(src, "|") {
		return src, nil
	}
	out := withDefault.ReplaceAllStringFunc(src, func(m string) string {
		g := withDefault.FindStringSubmatch(m)
		name, text := g[2], g[3]+g[4]
		if defaulted != nil {
			defaulted[name]++
		}
		open, shut := "{{ ", " }}"
		if g[1] == "{" {
			open, shut = "{{{ ", " }}}"
		}
		return "{{#" + name + "}}" + open + name + shut + "{{/" + name + "}}{{^" + name + "}}" + text + "{{/" + name + "}}"
	})
	if loc := anyPipe.FindStringIndex(out); loc != nil {
		line := 1 + strings.Count(out[:loc[0]], "\n")
		return "", fmt.Errorf("%s at line %d has a filter Mailroom does not have: only | default: \"text\" is read", clipTag(out[loc[0]:loc[1]]), line)
	}
	return out, nil
}
