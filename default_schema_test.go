package docket_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/migrate"
)

// defaultSchemaClaims are the ways the docs, the package docs and the
// CLI's help state which schema is used when none is named; each captures
// the schema it names.
var defaultSchemaClaims = []*regexp.Regexp{
	regexp.MustCompile(`(?i)schema\b[^"]{0,100}?empty means "(\w+)"`),   // Config fields
	regexp.MustCompile(`(?i)schema \("" means "(\w+)"\)`),               // migrate.New, queue.New
	regexp.MustCompile(`(?i)"(\w+)" when it is empty`),                  // pgsql.Schema
	regexp.MustCompile(`(?i)zero value[^.]{0,120}?schema "(\w+)"`),      // Config types
	regexp.MustCompile("(?i)zero value[^.]{0,120}?the `(\\w+)` schema"), // docs/dashboard.md
	regexp.MustCompile(`(?i)else \$DOCKET_SCHEMA, else (\w+)`),          // the CLI's package doc
	regexp.MustCompile(`DOCKET_SCHEMA[^\n]{0,80}\(default (\w+)\)`),     // the CLI's help
	regexp.MustCompile(`\[--schema (\w+)\]`),                            // usage lines
	regexp.MustCompile("(?i)tables (?:are )?not in [\"`](\\w+)[\"`]"),   // ent: search_path
}

var commentBreak = regexp.MustCompile(`\n[ \t]*//[ \t]*`)

// Every statement of the default schema — README, docs/, package and
// field docs, the CLI's help — names the one the code uses when the
// schema is left empty (pgsql.DefaultSchema), and so do the zero Configs.
func TestDocsStateTheDefaultSchema(t *testing.T) {
	want := pgsql.DefaultSchema
	if got, _ := pgsql.Schema(""); got != want {
		t.Fatalf("pgsql.Schema(\"\") = %q, want %q", got, want)
	}
	if c, err := admin.New(admin.Config{}); err != nil || c.Schema() != want {
		t.Errorf("the zero admin.Config reads schema %v (%v), want %q", c, err, want)
	}
	if _, err := migrate.New(""); err != nil {
		t.Errorf("migrate.New(\"\"): %v", err)
	}

	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "entgen") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Comments read as running text: a line break and "//" are a space.
		text := commentBreak.ReplaceAllString(string(b), " ")
		for _, re := range defaultSchemaClaims {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				found[path]++
				if m[1] != want {
					t.Errorf("%s: %q says the default schema is %q; the code uses %q", path, m[0], m[1], want)
				}
			}
		}
	}
	// The places known to state it; a pattern that stopped matching one
	// of them would let a wrong statement through.
	for _, path := range []string{"README.md", "docs/dashboard.md", "docs/ent.md", "client.go", "outbox/client.go",
		"outbox/relay/relay.go", "admin/client.go", "dashboard/dashboard.go", "migrate/migrate.go", "ent/doc.go", "cmd/docket/main.go"} {
		if found[filepath.FromSlash(path)] == 0 {
			t.Errorf("%s: no statement of the default schema found", path)
		}
	}
	t.Logf("statements by file: %v", found)
}
