package core

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Defaults and limits of a job's options.
const (
	DefaultQueue       = "default"
	DefaultMaxAttempts = 25

	MaxNameLen = 128 // queue, kind and tenant names
	MaxKeyLen  = 512 // unique and serial keys
)

// BadText says why PostgreSQL's text type cannot store v (not valid UTF-8,
// or a NUL byte), or returns "".
func BadText(v string) string {
	switch {
	case !utf8.ValidString(v):
		return "is not valid UTF-8"
	case strings.IndexByte(v, 0) >= 0:
		return "contains a NUL byte"
	}
	return ""
}

// CheckName applies the rules for a queue, kind or tenant name, named what
// in the error: at most MaxNameLen bytes of valid UTF-8 without spaces or
// control characters; empty only when emptyOK.
func CheckName(what, v string, emptyOK bool) error {
	if v == "" {
		if emptyOK {
			return nil
		}
		return fmt.Errorf("empty %s name", what)
	}
	if len(v) > MaxNameLen {
		return fmt.Errorf("%s name longer than %d bytes", what, MaxNameLen)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s name %q is not valid UTF-8", what, v)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return fmt.Errorf("%s name %q contains spaces or control characters", what, v)
	}
	return nil
}
