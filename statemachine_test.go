package docket_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// stateDoc is the one page that lists the job states and their transitions.
const stateDoc = "docs/state-machine.md"

// statePlace is one place that names the states of a job.
type statePlace struct {
	where  string
	states []string
}

// TestStatesAgree fails when the places that name the states of a job
// disagree, naming the place and the state: the CHECK constraint on
// docket_jobs.state of a freshly migrated schema, the Go list and
// constants, the Ent schema and its generated code, the job list (admin's Jobs.List
// and admin.JobStates, which `docket jobs list --state` offers:
// TestJobsListOffersEveryState in cmd/docket), the dashboard's jobs page
// and the tables of docs/state-machine.md. Every state literal compared with or assigned to
// a job's state in the schema's functions, triggers, indexes, views and
// constraints, and in Docket's Go SQL, must be one of those states, and
// every state must be used by some of them. It also checks that the
// functions, triggers and Go identifiers the page names exist, and that it
// lists every dead-letter reason.
func TestStatesAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	cat := readStateCatalog(t, ctx, pool, schema)
	doc := readStateDoc(t)

	live := []statePlace{
		{"the CHECK constraint on docket_jobs.state (migrate/migrations)", cat.check},
		{"internal/engine/core States()", stateStrings(core.States())},
		{"the State constants of internal/engine/core/job.go", goStateConsts(t, "internal/engine/core/job.go")},
		{"the State constants the root package exports (job.go)", rootStateConsts(t)},
		{"the Ent schema (ent/schema/job.go)", entSchemaStates(t)},
		{"Ent's generated State values (ent/entgen/job/job.go)", goStateConsts(t, "ent/entgen/job/job.go")},
		{stateDoc + ", table States, rows in docket_jobs", doc.live},
	}
	var all []string
	for _, p := range live {
		all = appendNew(all, p.states...)
	}
	compareStatePlaces(t, all, live)

	// What an operator can list: the live states, and where a job is after
	// it left docket_jobs.
	listable := appendNew(slices.Clone(all), admin.StateDead, admin.StateCompleted)
	ops, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	compareStatePlaces(t, listable, []statePlace{
		{"admin.JobStates (JobFilter.State, docket jobs list --state)", admin.JobStates()},
		{"admin Jobs.List (the states it lists jobs of)", listedStates(t, ctx, ops, pool, listable)},
		{"the dashboard's jobs page (its state filter)", dashboardStates(t, pool, schema)},
		{stateDoc + ", table States", doc.all},
	})

	// State literals in SQL: each a known state, and each state used.
	used := map[string]bool{}
	checkLiterals := func(where string, lits []string) {
		for _, l := range lits {
			used[l] = true
			if !slices.Contains(all, l) {
				t.Errorf("%s names state %q, which is no state of docket_jobs: every list of states lacks it", where, l)
			}
		}
	}
	for _, src := range cat.sql {
		checkLiterals(src.where, stateLiterals(src.text))
	}
	checkLiterals("the default of docket_jobs.state", quotedWords(cat.def))
	goSQL := goSQLStateLiterals(t)
	for _, src := range goSQL {
		checkLiterals(src.where, src.states)
	}
	if cat.functionsWithStates == 0 || cat.triggersWithStates == 0 || len(goSQL) == 0 {
		t.Errorf("found state literals in %d functions, %d triggers and %d Go strings: the extractor is broken",
			cat.functionsWithStates, cat.triggersWithStates, len(goSQL))
	}
	for _, s := range all {
		if !used[s] {
			t.Errorf("state %q: no function, trigger, index or view of the schema and no Go SQL statement compares or sets it", s)
		}
	}

	// The transitions table leads into and out of every state.
	for _, s := range listable {
		if !slices.Contains(doc.from, s) {
			t.Errorf("%s: no transition leaves state %q", stateDoc, s)
		}
		if !slices.Contains(doc.to, s) {
			t.Errorf("%s: no transition leads to state %q", stateDoc, s)
		}
	}
	for _, s := range append(slices.Clone(doc.from), doc.to...) {
		if s != "new" && s != "deleted" && !slices.Contains(listable, s) {
			t.Errorf("%s: a transition names %q, which is no state", stateDoc, s)
		}
	}
	compareStatePlaces(t, nil, []statePlace{
		{"the Reason constants of internal/engine/core/outcome.go", reasonConsts(t)},
		{stateDoc + ", table Dead-letter reasons", doc.reasons},
	})
	checkStateDocRefs(t, doc.text, cat.objects)
}

// compareStatePlaces reports each state of want, and each state any place
// names, that some place lacks.
func compareStatePlaces(t *testing.T, want []string, places []statePlace) {
	t.Helper()
	for _, p := range places {
		want = appendNew(want, p.states...)
	}
	for _, s := range want {
		var lacking []string
		for _, p := range places {
			if !slices.Contains(p.states, s) {
				lacking = append(lacking, p.where)
			}
		}
		if len(lacking) > 0 {
			t.Errorf("state %q is missing from:\n\t%s", s, strings.Join(lacking, "\n\t"))
		}
	}
}

func appendNew(list []string, more ...string) []string {
	for _, s := range more {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

func stateStrings(states []core.State) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// sqlText is SQL of one object of the schema.
type sqlText struct{ where, text string }

// stateCatalog is what the migrated schema says about states.
type stateCatalog struct {
	check []string // the states the CHECK constraint allows
	def   string   // the column default
	sql   []sqlText
	// objects are the names of the schema's relations, functions,
	// triggers and constraints.
	objects                                 map[string]bool
	functionsWithStates, triggersWithStates int
}

func readStateCatalog(t *testing.T, ctx context.Context, pool *pgxpool.Pool, schema string) stateCatalog {
	t.Helper()
	table := pgx.Identifier{schema, "docket_jobs"}.Sanitize()
	cat := stateCatalog{objects: map[string]bool{}}
	rows := func(sql string, args ...any) [][2]string {
		rs, err := pool.Query(ctx, sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) ([2]string, error) {
			var v [2]string
			return v, r.Scan(&v[0], &v[1])
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	const ns = `(SELECT oid FROM pg_namespace WHERE nspname = $1)`
	stateList := regexp.MustCompile(`^CHECK \(\(state = ANY \(ARRAY\[([^\]]*)\]\)\)\)$`)
	lists := 0
	for _, r := range rows(`SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = to_regclass($1) AND contype = 'c'`, table) {
		if m := stateList.FindStringSubmatch(r[1]); m != nil {
			cat.check = quotedWords(m[1])
			lists++
			continue
		}
		cat.sql = append(cat.sql, sqlText{"constraint " + r[0], r[1]})
	}
	if lists != 1 {
		t.Fatalf("want one CHECK (state IN (...)) constraint on docket_jobs, found %d", lists)
	}
	for _, r := range rows(`SELECT 'default', pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
		JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
		WHERE d.adrelid = to_regclass($1) AND a.attname = 'state'`, table) {
		cat.def = r[1]
	}
	for _, r := range rows(`SELECT proname, prosrc FROM pg_proc WHERE pronamespace = `+ns, schema) {
		cat.objects[r[0]] = true
		cat.sql = append(cat.sql, sqlText{"function " + r[0], r[1]})
		if len(stateLiterals(r[1])) > 0 {
			cat.functionsWithStates++
		}
	}
	for _, r := range rows(`SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t
		JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = `+ns+` AND NOT t.tgisinternal`, schema) {
		cat.objects[r[0]] = true
		cat.sql = append(cat.sql, sqlText{"trigger " + r[0], r[1]})
		if len(stateLiterals(r[1])) > 0 {
			cat.triggersWithStates++
		}
	}
	for _, r := range rows(`SELECT relname, CASE relkind WHEN 'v' THEN pg_get_viewdef(oid)
		WHEN 'i' THEN pg_get_indexdef(oid) WHEN 'I' THEN pg_get_indexdef(oid) ELSE '' END
		FROM pg_class WHERE relnamespace = `+ns, schema) {
		cat.objects[r[0]] = true
		cat.sql = append(cat.sql, sqlText{"relation " + r[0], r[1]})
	}
	for _, r := range rows(`SELECT conname, '' FROM pg_constraint WHERE connamespace = `+ns, schema) {
		cat.objects[r[0]] = true
	}
	return cat
}

var (
	// A state compared with one literal: state = 'x', j.state <> 'x'.
	stateCompare = regexp.MustCompile(`(?i)\bstate\s*(?:=|<>|!=)\s*('[^']*')`)
	// A state compared with a list: state IN ('x', 'y'), and as PostgreSQL
	// prints that, state = ANY (ARRAY['x'::text, 'y'::text]).
	stateIn = regexp.MustCompile(`(?i)\bstate\s*(?:(?:NOT\s+)?IN\s*\(|(?:=|<>|!=)\s*(?:ANY|ALL)\s*\(\s*ARRAY\[)([^)\]]*)`)
	// A state set from a CASE: SET state = CASE WHEN ... THEN 'x' ELSE 'y' END.
	stateCase  = regexp.MustCompile(`(?is)\bstate\s*=\s*CASE\b(.*?)\bEND\b`)
	caseResult = regexp.MustCompile(`(?i)\b(?:THEN|ELSE)\s+('[^']*')`)
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	quotedWord = regexp.MustCompile(`'([^']*)'`)
)

// stateLiterals returns the literals SQL compares a state column with or
// assigns to one.
func stateLiterals(sql string) []string {
	sql = sqlComment.ReplaceAllString(sql, "")
	var out []string
	for _, m := range stateCompare.FindAllStringSubmatch(sql, -1) {
		out = appendNew(out, quotedWords(m[1])...)
	}
	for _, m := range stateIn.FindAllStringSubmatch(sql, -1) {
		out = appendNew(out, quotedWords(m[1])...)
	}
	for _, m := range stateCase.FindAllStringSubmatch(sql, -1) {
		for _, r := range caseResult.FindAllStringSubmatch(m[1], -1) {
			out = appendNew(out, quotedWords(r[1])...)
		}
	}
	return out
}

func quotedWords(s string) []string {
	var out []string
	for _, m := range quotedWord.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// goStates is the state literals of one Go string.
type goStates struct {
	where  string
	states []string
}

// goSQLStateLiterals returns the state literals in the string literals of
// the module's Go files, tests and generated Ent code aside.
func goSQLStateLiterals(t *testing.T) []goStates {
	t.Helper()
	var out []goStates
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || path == filepath.Join("ent", "entgen")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if states := stateLiterals(s); len(states) > 0 {
				p := fset.Position(lit.Pos())
				out = append(out, goStates{where: p.Filename + ":" + strconv.Itoa(p.Line), states: states})
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func parseGo(t *testing.T, path string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// goConsts returns the string constants of a Go file whose declared type
// is typ ("" for any), by name.
func goConsts(t *testing.T, path, typ string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, decl := range parseGo(t, path).Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); typ != "" && (!ok || id.Name != typ) {
				continue
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out
}

// goStateConsts returns the values of a file's constants of type State.
func goStateConsts(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, v := range goConsts(t, path, "State") {
		out = appendNew(out, v)
	}
	return out
}

// rootStateConsts returns the values of the core.State constants the root
// package re-exports.
func rootStateConsts(t *testing.T) []string {
	t.Helper()
	values := goConsts(t, "internal/engine/core/job.go", "State")
	var out []string
	ast.Inspect(parseGo(t, "job.go"), func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for _, v := range vs.Values {
			if sel, ok := v.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "core" {
					if s, ok := values[sel.Sel.Name]; ok {
						out = appendNew(out, s)
					}
				}
			}
		}
		return false
	})
	return out
}

// entSchemaStates returns the values of field.Enum("state").Values(...) in
// the Ent schema of docket_jobs.
func entSchemaStates(t *testing.T) []string {
	t.Helper()
	var out []string
	isStateEnum := func(e ast.Expr) bool {
		c, ok := e.(*ast.CallExpr)
		if !ok || len(c.Args) != 1 {
			return false
		}
		sel, ok := c.Fun.(*ast.SelectorExpr)
		lit, isLit := c.Args[0].(*ast.BasicLit)
		return ok && sel.Sel.Name == "Enum" && isLit && lit.Value == `"state"`
	}
	ast.Inspect(parseGo(t, "ent/schema/job.go"), func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := c.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Values" || !isStateEnum(sel.X) {
			return true
		}
		for _, a := range c.Args {
			if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, _ := strconv.Unquote(lit.Value)
				out = appendNew(out, s)
			}
		}
		return false
	})
	return out
}

// reasonConsts returns the values of the dead-letter Reason constants.
func reasonConsts(t *testing.T) []string {
	t.Helper()
	var out []string
	for name, v := range goConsts(t, "internal/engine/core/outcome.go", "") {
		if strings.HasPrefix(name, "Reason") {
			out = appendNew(out, v)
		}
	}
	return out
}

// listedStates returns the states of candidates Jobs.List lists jobs of,
// after checking that it refuses a state that is none.
func listedStates(t *testing.T, ctx context.Context, ops *admin.Client, pool *pgxpool.Pool, candidates []string) []string {
	t.Helper()
	if _, err := ops.Jobs().List(ctx, pool, admin.JobFilter{State: "no-such-state"}); err == nil {
		t.Error(`Jobs.List lists jobs of state "no-such-state"`)
	}
	var out []string
	for _, s := range candidates {
		if _, err := ops.Jobs().List(ctx, pool, admin.JobFilter{State: s, Limit: 1}); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// dashboardStates returns the states the dashboard's jobs page offers in its
// state filter.
func dashboardStates(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	h, err := dashboard.Handler(pool, dashboard.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/jobs", nil)
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	sel := regexp.MustCompile(`(?s)<select name="state">(.*?)</select>`).FindSubmatch(body)
	if rec.Code != 200 || sel == nil {
		t.Fatalf("jobs page: status %d, no state filter in:\n%s", rec.Code, body)
	}
	var out []string
	for _, m := range regexp.MustCompile(`<option value="([^"]+)"`).FindAllSubmatch(sel[1], -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// stateDocTables is what docs/state-machine.md lists.
type stateDocTables struct {
	text      string
	live, all []string // the States table: rows in docket_jobs, every row
	from, to  []string // the states the Transitions table leads from and to
	reasons   []string
}

var sentenceEnd = regexp.MustCompile(`\.\s`)

var codeSpan = regexp.MustCompile("`([^`\n]+)`")

func codeSpans(s string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func readStateDoc(t *testing.T) stateDocTables {
	t.Helper()
	b, err := os.ReadFile(stateDoc)
	if err != nil {
		t.Fatal(err)
	}
	d := stateDocTables{text: string(b)}
	// The rows of the table in each section, as cells.
	section := ""
	tables := map[string][][]string{}
	for _, line := range strings.Split(d.text, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		tables[section] = append(tables[section], cells)
	}
	rows := func(section string, cols int) [][]string {
		rs := tables[section]
		if len(rs) < 2 {
			t.Fatalf("%s: no table in section %q", stateDoc, section)
		}
		for _, r := range rs {
			if len(r) != cols {
				t.Fatalf("%s: section %q: want %d cells in row %q", stateDoc, section, cols, r)
			}
		}
		return rs[1:] // after the header
	}
	for _, r := range rows("States", 3) {
		name, table := codeSpans(r[0]), codeSpans(r[1])
		if len(name) != 1 || len(table) != 1 {
			t.Fatalf("%s: States: want a state and a table in row %q", stateDoc, r)
		}
		d.all = append(d.all, name[0])
		if table[0] == "docket_jobs" {
			d.live = append(d.live, name[0])
		}
	}
	// A cell of the transitions table names states in code, "new" or
	// "deleted"; a reason may follow a state in brackets.
	states := func(cell string) []string {
		cell, _, _ = strings.Cut(cell, "(")
		out := codeSpans(cell)
		for _, w := range []string{"new", "deleted"} {
			if strings.Contains(cell, w) {
				out = append(out, w)
			}
		}
		return out
	}
	for _, r := range rows("Transitions", 4) {
		d.from = appendNew(d.from, states(r[0])...)
		d.to = appendNew(d.to, states(r[1])...)
	}
	for _, r := range rows("Dead-letter reasons", 2) {
		d.reasons = append(d.reasons, codeSpans(r[0])...)
	}
	return d
}

// checkStateDocRefs checks the code the page names: each docket_* name is an
// object of the migrated schema, and in each table cell or sentence, the
// identifiers that follow a Go file's path are declared in that file
// (Type.Method for methods).
func checkStateDocRefs(t *testing.T, text string, objects map[string]bool) {
	t.Helper()
	decls := map[string]map[string]bool{}
	declared := func(path, name string) bool {
		if decls[path] == nil {
			decls[path] = map[string]bool{}
			for _, d := range parseGo(t, path).Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					name := d.Name.Name
					if d.Recv != nil {
						recv := d.Recv.List[0].Type
						if s, ok := recv.(*ast.StarExpr); ok {
							recv = s.X
						}
						name = recv.(*ast.Ident).Name + "." + name
					}
					decls[path][name] = true
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.ValueSpec:
							for _, n := range s.Names {
								decls[path][n.Name] = true
							}
						case *ast.TypeSpec:
							decls[path][s.Name.Name] = true
						}
					}
				}
			}
		}
		return decls[path][name]
	}
	ident := regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$`)
	checked := 0
	for _, para := range strings.Split(text, "\n\n") {
		segments := sentenceEnd.Split(para, -1)
		if strings.HasPrefix(para, "|") {
			segments = strings.Split(para, "|")
		}
		for _, seg := range segments {
			file := ""
			for _, span := range codeSpans(seg) {
				switch {
				case strings.HasSuffix(span, ".go"):
					if _, err := os.Stat(span); err != nil {
						t.Errorf("%s names %s: %v", stateDoc, span, err)
					}
					file = span
				case strings.HasPrefix(span, "docket_") && ident.MatchString(span):
					checked++
					if !objects[span] {
						t.Errorf("%s names %s, which the migrated schema lacks", stateDoc, span)
					}
				case file != "" && ident.MatchString(span):
					checked++
					if !declared(file, span) {
						t.Errorf("%s names %s in %s, which does not declare it", stateDoc, span, file)
					}
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("%s: checked only %d names: the reference check is broken", stateDoc, checked)
	}
}
