package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Shape is a partial match of a JSON object: every key named must be there
// with a matching value, other keys may be anything. A value is a literal
// (nil means null; numbers compare as JSON numbers), a nested Shape, a
// []any matched element by element with the same length, or a Matcher
// (Absent, Present, Len, Var, NotVar, Prefix, Each, Keys, All).
type Shape map[string]any

// Matcher checks one value of the answer. present is false when the key is
// missing (got is then nil).
type Matcher interface {
	match(path string, got any, present bool, vars map[string]string) error
}

func (s Shape) match(path string, got any, present bool, vars map[string]string) error {
	obj, ok := got.(map[string]any)
	if !present || !ok {
		return fmt.Errorf("%s: want an object, got %s", name(path), show(got, present))
	}
	for k, want := range s {
		v, ok := obj[k]
		if err := matchValue(join(path, k), want, v, ok, vars); err != nil {
			return err
		}
	}
	return nil
}

func matchValue(path string, want, got any, present bool, vars map[string]string) error {
	switch w := want.(type) {
	case Matcher:
		return w.match(path, got, present, vars)
	case map[string]any:
		return Shape(w).match(path, got, present, vars)
	case []any:
		arr, ok := got.([]any)
		if !present || !ok || len(arr) != len(w) {
			return fmt.Errorf("%s: want %d elements, got %s", name(path), len(w), show(got, present))
		}
		for i := range w {
			if err := matchValue(fmt.Sprintf("%s.%d", path, i), w[i], arr[i], true, vars); err != nil {
				return err
			}
		}
		return nil
	}
	if !present {
		return fmt.Errorf("%s: missing, want %s", name(path), show(want, true))
	}
	// Compare as JSON values: 3 and 3.0 alike, []string and []any alike.
	b, err := json.Marshal(want)
	if err != nil {
		return fmt.Errorf("%s: cannot encode the wanted value: %v", name(path), err)
	}
	var norm any
	_ = json.Unmarshal(b, &norm)
	if !reflect.DeepEqual(norm, got) {
		return fmt.Errorf("%s: want %s, got %s", name(path), b, show(got, true))
	}
	return nil
}

type matcherFunc func(path string, got any, present bool, vars map[string]string) error

func (f matcherFunc) match(path string, got any, present bool, vars map[string]string) error {
	return f(path, got, present, vars)
}

// Absent: the key must not be there.
var Absent Matcher = matcherFunc(func(path string, got any, present bool, _ map[string]string) error {
	if present {
		return fmt.Errorf("%s: want absent, got %s", name(path), show(got, true))
	}
	return nil
})

// Present: the key must be there, with any value (null too).
var Present Matcher = matcherFunc(func(path string, got any, present bool, _ map[string]string) error {
	if !present {
		return fmt.Errorf("%s: missing", name(path))
	}
	return nil
})

// Len: an array, object or string of n elements (characters for strings).
func Len(n int) Matcher {
	return matcherFunc(func(path string, got any, present bool, _ map[string]string) error {
		l := -1
		switch x := got.(type) {
		case []any:
			l = len(x)
		case map[string]any:
			l = len(x)
		case string:
			l = len(x)
		}
		if l != n {
			return fmt.Errorf("%s: want length %d, got %s", name(path), n, show(got, present))
		}
		return nil
	})
}

// Var: the value saved under name.
func Var(v string) Matcher {
	return matcherFunc(func(path string, got any, present bool, vars map[string]string) error {
		want, ok := vars[v]
		if !ok {
			return fmt.Errorf("%s: {%s} was never saved", name(path), v)
		}
		if s, _ := got.(string); !present || s != want {
			return fmt.Errorf("%s: want {%s} = %q, got %s", name(path), v, want, show(got, present))
		}
		return nil
	})
}

// NotVar: a string other than the value saved under name.
func NotVar(v string) Matcher {
	return matcherFunc(func(path string, got any, present bool, vars map[string]string) error {
		s, ok := got.(string)
		if !present || !ok || s == "" || s == vars[v] {
			return fmt.Errorf("%s: want a string other than {%s} = %q, got %s", name(path), v, vars[v], show(got, present))
		}
		return nil
	})
}

// Prefix: a string starting with p.
func Prefix(p string) Matcher {
	return matcherFunc(func(path string, got any, present bool, _ map[string]string) error {
		if s, ok := got.(string); !present || !ok || !strings.HasPrefix(s, p) {
			return fmt.Errorf("%s: want a string starting %q, got %s", name(path), p, show(got, present))
		}
		return nil
	})
}

// Each: an array whose every element matches want.
func Each(want any) Matcher {
	return matcherFunc(func(path string, got any, present bool, vars map[string]string) error {
		arr, ok := got.([]any)
		if !present || !ok {
			return fmt.Errorf("%s: want an array, got %s", name(path), show(got, present))
		}
		for i, el := range arr {
			if err := matchValue(fmt.Sprintf("%s.%d", path, i), want, el, true, vars); err != nil {
				return err
			}
		}
		return nil
	})
}

// Keys: an object with exactly these keys, whatever their values.
func Keys(keys ...string) Matcher {
	return matcherFunc(func(path string, got any, present bool, _ map[string]string) error {
		obj, ok := got.(map[string]any)
		if !present || !ok || len(obj) != len(keys) {
			return fmt.Errorf("%s: want exactly the keys %v, got %s", name(path), keys, show(got, present))
		}
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				return fmt.Errorf("%s: want exactly the keys %v, got %s", name(path), keys, show(got, present))
			}
		}
		return nil
	})
}

// All: the value matches every one of want (e.g. All(Len(2), Each(...))).
func All(want ...any) Matcher {
	return matcherFunc(func(path string, got any, present bool, vars map[string]string) error {
		for _, w := range want {
			if err := matchValue(path, w, got, present, vars); err != nil {
				return err
			}
		}
		return nil
	})
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func name(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

func show(v any, present bool) string {
	if !present {
		return "nothing"
	}
	b, _ := json.Marshal(v)
	if len(b) > 300 {
		b = append(b[:300], "..."...)
	}
	return string(b)
}
