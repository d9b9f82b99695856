package pgsql

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// FuzzSchema checks that a schema name is either rejected or reaches SQL as
// one properly quoted identifier that also makes a valid NOTIFY channel.
func FuzzSchema(f *testing.F) {
	for _, s := range []string{
		"", "public", "docket", "select", "user", "_", "a1",
		`x"; DROP TABLE docket_jobs; --`, `x"y`, "Upper", "a-b", "a.b", "a b", "é",
		strings.Repeat("a", MaxSchemaLen), strings.Repeat("a", MaxSchemaLen+1), strings.Repeat("a", 64),
	} {
		f.Add(s)
	}
	const sql = "SELECT 1 FROM {{schema}}.docket_jobs WHERE {{schema}}.docket_jobs.id = 1"
	f.Fuzz(func(t *testing.T, name string) {
		got, err := Schema(name)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("Schema(%q) error %v does not wrap ErrInvalidSchema", name, err)
			}
			return
		}
		if name == "" {
			if got != "public" {
				t.Fatalf(`Schema("") = %q, want public`, got)
			}
			return
		}
		if got != name {
			t.Fatalf("Schema(%q) = %q, want it unchanged", name, got)
		}
		// NOTIFY rejects channels of 64 bytes or more; identifiers are
		// truncated at 63 bytes.
		if ch := "docket_" + got; len(ch) > 63 {
			t.Fatalf("accepted %q, but its channel %q is %d bytes, over 63", name, ch, len(ch))
		}
		for _, r := range got {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				t.Fatalf("accepted %q, which holds %q", name, r)
			}
		}
		quoted := pgx.Identifier{got}.Sanitize()
		want := strings.ReplaceAll(sql, "{{schema}}", quoted)
		if r := Render(sql, got); r != want {
			t.Fatalf("Render for %q = %q, want %q", name, r, want)
		}
		// The quoted identifier must read back as exactly the name: one
		// quoted token with no quote inside to end it early.
		id, rest, ok := unquote(Render("{{schema}}.t", got))
		if !ok || id != got || rest != ".t" {
			t.Fatalf("Render of %q reads back as identifier %q then %q (ok %v)", name, id, rest, ok)
		}
	})
}

// unquote reads one double-quoted SQL identifier at the start of s, as
// PostgreSQL does ("" stands for one quote), and returns it and what follows.
func unquote(s string) (id, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '"' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '"' {
			b.WriteByte('"')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", s, false
}
