package migrate

import (
	"errors"
	"strings"
	"testing"
)

// FuzzGrantSQL checks that a role name reaches the grant script only as a
// quoted identifier: read as PostgreSQL would, the script is the template
// with each placeholder replaced by one identifier that is the schema or
// the role, so no role can add or end a statement.
func FuzzGrantSQL(f *testing.F) {
	for _, r := range []string{"app", "App Role", `x"; DROP SCHEMA public CASCADE; --`, `"`, `""`, "{{role}}", "{{schema}}",
		"a;b", "--", "/*", "$$", "'", "\xff", "a\x00b", "", strings.Repeat("r", 63), strings.Repeat("r", 64)} {
		f.Add(r)
	}
	m, err := New("shop")
	if err != nil {
		f.Fatal(err)
	}
	shape := strings.NewReplacer("{{schema}}", "\x01", "{{role}}", "\x01").Replace(grantSQL)
	f.Fuzz(func(t *testing.T, role string) {
		sql, err := m.GrantSQL(role)
		if err != nil {
			if !errors.Is(err, ErrInvalidRole) {
				t.Fatalf("GrantSQL(%q) error %v does not wrap ErrInvalidRole", role, err)
			}
			if role != "" && len(role) <= 63 && !strings.Contains(role, "\x00") {
				t.Fatalf("GrantSQL(%q) refused a valid role: %v", role, err)
			}
			return
		}
		var out strings.Builder
		for rest := sql; rest != ""; {
			i := strings.IndexByte(rest, '"')
			if i < 0 {
				out.WriteString(rest)
				break
			}
			out.WriteString(rest[:i])
			id, after, ok := readIdent(rest[i:])
			if !ok {
				t.Fatalf("role %q: unterminated identifier in\n%s", role, sql)
			}
			if id != "shop" && id != role {
				t.Fatalf("role %q: identifier %q is neither schema nor role in\n%s", role, id, sql)
			}
			out.WriteByte('\x01')
			rest = after
		}
		if out.String() != shape {
			t.Fatalf("role %q changed the script's shape:\n%s", role, sql)
		}
	})
}

// readIdent reads the double-quoted identifier at the start of s as
// PostgreSQL does ("" stands for one quote) and returns it and what follows.
func readIdent(s string) (id, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] != '"':
			b.WriteByte(s[i])
		case i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		default:
			return b.String(), s[i+1:], true
		}
	}
	return "", s, false
}
