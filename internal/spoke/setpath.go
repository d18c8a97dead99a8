package spoke

import (
	"errors"
	"fmt"
	"strings"
)

// A field path of `kubectl spoke set` is a list of map keys under spec,
// written as kubectl's JSONPath and Helm's --set write them:
//
//	klusterlet.annotations.team               keys separated by dots
//	klusterlet.annotations["example.com/team"] a key with dots, in brackets ('...' works too)
//	klusterlet.annotations.example\.com/team  the same, the dot escaped
//
// The path ends at the first '=' outside brackets and escapes.

// splitAssignment splits FIELD=VALUE into the path of FIELD and VALUE.
func splitAssignment(arg string) (path []string, value string, err error) {
	var key strings.Builder
	// open: a key is being written; closed: a bracketed key just ended, so
	// only '.', '[' or '=' may follow.
	open, closed := false, false
	end := func() error {
		if !open {
			return errors.New("a key is empty")
		}
		path = append(path, key.String())
		key.Reset()
		open, closed = false, false
		return nil
	}
	for i := 0; i < len(arg); {
		c := arg[i]
		if closed && c != '.' && c != '[' && c != '=' {
			return nil, "", fmt.Errorf("%q follows a bracketed key: put a '.' between keys", c)
		}
		switch c {
		case '\\':
			if i+1 == len(arg) {
				return nil, "", errors.New("it ends in a lone '\\'")
			}
			key.WriteByte(arg[i+1])
			open = true
			i += 2
		case '.':
			if err := end(); err != nil {
				return nil, "", err
			}
			i++
		case '[':
			if open {
				if err := end(); err != nil {
					return nil, "", err
				}
			}
			k, n, err := bracketKey(arg[i:])
			if err != nil {
				return nil, "", err
			}
			key.WriteString(k)
			open, closed = true, true
			i += n
		case '=':
			if err := end(); err != nil {
				return nil, "", err
			}
			return path, arg[i+1:], nil
		default:
			key.WriteByte(c)
			open = true
			i++
		}
	}
	return nil, "", errors.New("there is no '=' after the field")
}

// bracketKey reads ["key"], ['key'] or [key] at the start of s, and how
// many bytes it took.
func bracketKey(s string) (key string, n int, err error) {
	if len(s) > 1 && (s[1] == '"' || s[1] == '\'') {
		q := s[1]
		var b strings.Builder
		for i := 2; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				}
			case q:
				if i+1 == len(s) || s[i+1] != ']' {
					return "", 0, fmt.Errorf("a quoted key must end in %c]", q)
				}
				if b.Len() == 0 {
					return "", 0, errors.New("a key is empty")
				}
				return b.String(), i + 2, nil
			default:
				b.WriteByte(s[i])
			}
		}
		return "", 0, errors.New("a quoted key is not closed")
	}
	i := strings.IndexByte(s, ']')
	switch {
	case i < 0:
		return "", 0, errors.New("a '[' is not closed")
	case i == 1:
		return "", 0, errors.New("a key is empty")
	case strings.Trim(s[1:i], "0123456789") == "":
		return "", 0, fmt.Errorf("%s: list items cannot be set one by one; set the whole list, e.g. addOns=[...]", s[:i+1])
	}
	return s[1:i], i + 1, nil
}

// FormatPath writes a path the way set reads it: keys that need it in
// brackets.
func FormatPath(path []string) string {
	var b strings.Builder
	for i, k := range path {
		if k != "" && !strings.ContainsAny(k, `.[]\="'`) {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
			continue
		}
		b.WriteString(`["`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k))
		b.WriteString(`"]`)
	}
	return b.String()
}
