package docket_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/freshmod"
)

// snippet is one fenced Go block of a Markdown page.
type snippet struct {
	doc  string // path of the page, e.g. docs/outbox.md
	line int    // line of the block's first line of code
	code string // the block, its fence's indentation removed
}

var fence = regexp.MustCompile("^([ \t]*)```(\\S*)[ \t]*$")

// goSnippets returns the ```go blocks of the Markdown page at path.
func goSnippets(t *testing.T, path string) []snippet {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []snippet
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, lang := m[1], m[2]
		start := i + 1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: code block is not closed", path, start)
		}
		if lang != "go" {
			continue
		}
		body := make([]string, 0, i-start)
		for _, l := range lines[start:i] {
			body = append(body, strings.TrimPrefix(l, indent))
		}
		out = append(out, snippet{doc: path, line: start + 1, code: strings.Join(body, "\n")})
	}
	return out
}

// importPaths names the packages a snippet may use without importing them,
// by the name it uses. A snippet's file imports those of them it refers to.
var importPaths = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "log": "log", "os": "os",
	"time": "time", "http": "net/http", "slog": "log/slog", "json": "encoding/json",
	"sql": "database/sql", "signal": "os/signal", "syscall": "syscall",

	"docket":      "github.com/docketq/docket",
	"handlers":    "github.com/docketq/docket/handlers",
	"outbox":      "github.com/docketq/docket/outbox",
	"admin":       "github.com/docketq/docket/admin",
	"migrate":     "github.com/docketq/docket/migrate",
	"schedule":    "github.com/docketq/docket/schedule",
	"relay":       "github.com/docketq/docket/outbox/relay",
	"natsrelay":   "github.com/docketq/docket/outbox/relay/natsrelay",
	"kafkarelay":  "github.com/docketq/docket/outbox/relay/kafkarelay",
	"rabbitrelay": "github.com/docketq/docket/outbox/relay/rabbitrelay",
	"dashboard":   "github.com/docketq/docket/dashboard",
	"dockettest":  "github.com/docketq/docket/dockettest",
	"docketent":   "github.com/docketq/docket/ent",
	"entgen":      "github.com/docketq/docket/ent/entgen",
	"job":         "github.com/docketq/docket/ent/entgen/job",
	"deadjob":     "github.com/docketq/docket/ent/entgen/deadjob",
	// The Ent pages' generated package ("your generated package") is the
	// shipments example's.
	"ent":  "github.com/docketq/docket/examples/shipments/ent",
	"hook": "github.com/docketq/docket/examples/shipments/ent/hook",

	"entsql":    "entgo.io/ent/dialect/sql",
	"dialect":   "entgo.io/ent/dialect",
	"pgx":       "github.com/jackc/pgx/v5",
	"pgxpool":   "github.com/jackc/pgx/v5/pgxpool",
	"pgconn":    "github.com/jackc/pgx/v5/pgconn",
	"stdlib":    "github.com/jackc/pgx/v5/stdlib",
	"nats":      "github.com/nats-io/nats.go",
	"jetstream": "github.com/nats-io/nats.go/jetstream",

	"prometheus": "github.com/prometheus/client_golang/prometheus",
}

// snippetSource turns s into a Go file of package snippet: as it is when it
// has a package clause, as top-level declarations when it parses as such,
// else as the body of a function returning error. It imports the packages
// of importPaths that the code names and does not declare; //line
// comments make compile errors point at the page's lines.
func snippetSource(t *testing.T, s snippet) string {
	t.Helper()
	pos := fmt.Sprintf("//line %s:%d\n", s.doc, s.line)
	if regexp.MustCompile(`(?m)^package \w+`).MatchString(s.code) {
		return pos + s.code + "\n"
	}
	header, body := "package snippet\n", pos+s.code+"\n"
	if !parsesAsFile(header + body) {
		body = "func snippet() error {\n" + body + "\treturn nil\n}\n"
	}
	// Unresolved identifiers are the ones the snippet uses without
	// declaring them: package names, and the page's own names, which its
	// scaffold declares.
	f, err := parser.ParseFile(token.NewFileSet(), "", header+body, 0)
	if err != nil {
		t.Errorf("%s:%d: the Go block does not parse: %v", s.doc, s.line, err)
		return header
	}
	have := map[string]bool{}
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		have[p] = true
		if im.Name != nil {
			have[im.Name.Name] = true
		}
	}
	var imports []string
	for _, id := range f.Unresolved {
		p, ok := importPaths[id.Name]
		if !ok || have[p] || have[id.Name] {
			continue
		}
		have[p] = true
		imports = append(imports, fmt.Sprintf("\t%s %q\n", id.Name, p))
	}
	slices.Sort(imports)
	if len(imports) == 0 {
		return header + body
	}
	return header + "\nimport (\n" + strings.Join(imports, "") + ")\n\n" + body
}

// parsesAsFile reports whether src is a Go file of declarations only.
func parsesAsFile(src string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	return err == nil && f != nil && (len(f.Decls) > 0 || len(f.Comments) > 0)
}

// Errors that mark a snippet as an excerpt, not as wrong: a block shows a
// step and may leave a result or an import unused. Every other compile
// error fails the test.
var excerptErrors = regexp.MustCompile(`declared and not used|imported (as \w+ )?and not used`)

// Every Go block of README.md and docs/*.md compiles against Docket's
// public API, as a user would paste it: in a fresh module, beside the
// declarations the page assumes (testdata/snippets/<page>.go: the user's
// job types, a pool, a client), with the imports it names. A block that
// calls a method Docket does not have, or passes the wrong type, fails.
func TestDocSnippetsCompile(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{"README.md"}, docs...)
	files := map[string]string{}
	var all []snippet
	for _, doc := range docs {
		page := strings.ToLower(strings.TrimSuffix(filepath.Base(doc), ".md"))
		scaffold, err := os.ReadFile(filepath.Join("testdata", "snippets", page+".go"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, s := range goSnippets(t, doc) {
			dir := fmt.Sprintf("s%02d", len(all))
			all = append(all, s)
			files[dir+"/snippet.go"] = snippetSource(t, s)
			if scaffold != nil {
				files[dir+"/scaffold.go"] = string(scaffold)
			}
		}
	}
	if len(all) < 15 {
		t.Fatalf("found %d Go blocks in README.md and docs/*.md; the extractor is broken", len(all))
	}
	out, err := freshmod.BuildPackages(t, files, "-gcflags=-e")
	if err == nil {
		return
	}
	var bad []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, "# ") || excerptErrors.MatchString(l) {
			continue
		}
		bad = append(bad, l)
	}
	if len(bad) > 0 {
		t.Fatalf("Go blocks of the docs do not compile:\n%s", strings.Join(bad, "\n"))
	}
}

// The extractor finds indented blocks and leaves other languages alone,
// and a snippet is wrapped by its shape.
func TestSnippetSource(t *testing.T) {
	t.Parallel()
	page := filepath.Join(t.TempDir(), "page.md")
	md := "text\n\n1. A step:\n\n   ```go\n   err := client.Start(ctx)\n   ```\n\n```sh\ngo test ./...\n```\n\n```go\nfunc main() { fmt.Println(time.Now()) }\n```\n"
	if err := os.WriteFile(page, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	got := goSnippets(t, page)
	if len(got) != 2 || got[0].code != "err := client.Start(ctx)" || got[0].line != 6 || got[1].line != 14 {
		t.Fatalf("goSnippets = %+v", got)
	}
	stmt := snippetSource(t, got[0])
	if !strings.Contains(stmt, "func snippet() error {") || strings.Contains(stmt, "import") {
		t.Errorf("a statement block is not wrapped in a function, or imports what it does not name:\n%s", stmt)
	}
	decl := snippetSource(t, got[1])
	if strings.Contains(decl, "func snippet()") || !strings.Contains(decl, "\tfmt \"fmt\"\n") || !strings.Contains(decl, "\ttime \"time\"\n") {
		t.Errorf("a declaration block is wrapped, or lacks the imports it names:\n%s", decl)
	}
	shadow := snippetSource(t, snippet{doc: "x.md", line: 1, code: "handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[T]) error { return job.Err }, handlers.KindOpts{})"})
	if strings.Contains(shadow, `"github.com/docketq/docket/ent/entgen/job"`) {
		t.Errorf("a parameter named job imported package job:\n%s", shadow)
	}
}

// README's quick start says it is the package's runnable Example: the body
// of its main is Example's, but for where the URL comes from and the
// example's expected output.
func TestREADMEQuickStartIsTheExample(t *testing.T) {
	t.Parallel()
	var quick string
	for _, s := range goSnippets(t, "README.md") {
		if strings.Contains(s.code, "func main() {") {
			quick = s.code
			break
		}
	}
	_, main, ok := strings.Cut(quick, "func main() {\n")
	if !ok {
		t.Fatal("README has no Go block with a main function")
	}
	main = main[:strings.LastIndex(main, "}")]

	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var example string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Example" {
			body := src[fset.Position(fn.Body.Lbrace).Offset+2 : fset.Position(fn.Body.Rbrace).Offset]
			example = string(body)
		}
	}
	if example == "" {
		t.Fatal("example_test.go has no func Example")
	}
	example = regexp.MustCompile(`(?m)^\s*// Output:.*\n`).ReplaceAllString(example, "")
	example = regexp.MustCompile(`databaseURL\(\)(\)?) // os\.Getenv\("DATABASE_URL"\)`).
		ReplaceAllString(example, `os.Getenv("DATABASE_URL")$1`)
	example, main = strings.TrimSpace(example), strings.TrimSpace(main)
	if example != main {
		t.Errorf("README's quick start differs from Example in example_test.go:\n--- README\n%s\n--- Example\n%s", main, example)
	}
}

// go doc shows an alias without its fields, so the root package's Job
// comment lists them: every field of the job a handler gets is there.
func TestJobDocNamesEveryField(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("job.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "job.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			if s.(*ast.TypeSpec).Name.Name == "Job" {
				doc = g.Doc.Text()
			}
		}
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  - ([^:]+):`).FindAllStringSubmatch(doc, -1) {
		for _, w := range regexp.MustCompile(`\b[A-Z]\w*\b`).FindAllString(m[1], -1) {
			named[w] = true
		}
	}
	fields := reflect.TypeFor[docket.Job]()
	for i := range fields.NumField() {
		// Unexported fields (what a claim read for the handler's getters)
		// are not the handler author's to read.
		if f := fields.Field(i); f.IsExported() && !named[f.Name] {
			t.Errorf("the doc comment of docket.Job does not list field %s", f.Name)
		}
	}
	if len(named) == 0 {
		t.Fatalf("found no field list in the doc comment of docket.Job:\n%s", doc)
	}
}

// The changelog and the docs name only versions that exist as tags: a
// release heading or an install command for a version never cut sends a
// user to nothing.
func TestDocsNameOnlyTaggedVersions(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("git", "tag", "--list", "v*").Output()
	if err != nil {
		t.Skipf("no git tags to compare with (not a git checkout?): %v", err)
	}
	tags := map[string]bool{}
	for _, tag := range strings.Fields(string(out)) {
		tags[tag] = true
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`^## \[(\d+\.\d+\.\d+[^\]]*)\]|@(v\d+\.\d+\.\d+\S*?)\b`)
	for _, path := range append([]string{"README.md", "CHANGELOG.md"}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range version.FindAllStringSubmatch(line, -1) {
				v := m[2]
				if m[1] != "" {
					v = "v" + m[1]
				}
				if !tags[v] {
					t.Errorf("%s:%d names version %s, which is not a git tag", path, i+1, v)
				}
			}
		}
	}
}

// README lists what the test command needs; .ci/run installs exactly that
// list on a fresh machine.
func TestREADMEPrerequisitesAreWhatCIInstalls(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, para, ok := strings.Cut(string(readme), "\nPrerequisites of the test command")
	if !ok {
		t.Fatal("README has no paragraph starting \"Prerequisites of the test command\"")
	}
	para, _, _ = strings.Cut(para, "\n\n")
	para, _, _ = strings.Cut(para, "Tests use") // the list ends with its sentence
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9-]+)`").FindAllStringSubmatch(para, -1) {
		listed[m[1]] = true
	}
	script, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	installed := map[string]bool{}
	for _, m := range regexp.MustCompile(`apt-get install -y ([a-z0-9 -]+)`).FindAllStringSubmatch(string(script), -1) {
		for _, pkg := range strings.Fields(m[1]) {
			installed[pkg] = true
		}
	}
	if len(listed) == 0 || !maps.Equal(listed, installed) {
		t.Errorf("README's prerequisites %v differ from what .ci/run installs %v", slices.Sorted(maps.Keys(listed)), slices.Sorted(maps.Keys(installed)))
	}
}
