package docket_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// heavyModules are what a service that only enqueues and runs jobs should
// never get in its module graph from Docket: broker clients, Ent and its
// schema tooling, a browser driver.
var heavyModules = regexp.MustCompile(`github\.com/nats-io/|github\.com/rabbitmq/|github\.com/twmb/franz-go|entgo\.io/|ariga\.io/|github\.com/hashicorp/|github\.com/chromedp/`)

// The core module (the root go.mod, without the workspace) requires no
// broker client, no Ent and no browser driver, and neither the root package
// nor handlers links one: those live in modules of their own.
func TestCoreModuleRequiresNoBrokerClient(t *testing.T) {
	t.Parallel()
	graph := goOutput(t, "mod", "graph")
	if len(strings.Fields(graph)) < 10 {
		t.Fatalf("go mod graph printed almost nothing:\n%s", graph)
	}
	for _, line := range strings.Split(graph, "\n") {
		if heavyModules.MatchString(line) {
			t.Errorf("the core module's graph has %q", line)
		}
	}
	deps := goOutput(t, "list", "-deps", ".", "./handlers")
	if !strings.Contains(deps, "github.com/jackc/pgx/v5\n") {
		t.Fatalf("go list -deps shows no pgx; is it listing the right packages?\n%s", deps)
	}
	for _, p := range strings.Split(deps, "\n") {
		if heavyModules.MatchString(p) {
			t.Errorf("the root package or handlers links %s", p)
		}
	}
}

// goOutput runs the go command on the core module alone (GOWORK=off, as a
// user's build sees it) and returns its output.
func goOutput(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// moduleDirs is how the test command names every module of the workspace:
// one pattern per module directory that go list -m lists. ./... would stop
// at the core module's boundary.
const moduleDirs = `$(go list -f '{{.Dir}}/...' -m)`

// README's test command, the one a newcomer runs, is the one CI runs.
func TestREADMETestCommandIsWhatCIRuns(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?m)^(go test [^#\n]*?)\\s*#").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README's first block has no go test command")
	}
	command := string(m[1])
	script, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !hasLine(string(script), command) {
		t.Errorf(".ci/run does not run README's test command %q on a line of its own", command)
	}
	if !strings.Contains(command, moduleDirs) {
		t.Errorf("README's test command %q does not test each module's directory (%s)", command, moduleDirs)
	}
}

func hasLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// The test command's patterns reach every module of the repository: each
// go.mod in the tree is a workspace module (go.work), so go list -m names
// its directory and the test command tests it. A nested module left out of
// go.work fails here instead of going untested.
func TestTestCommandReachesEveryModule(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	inWorkspace := map[string]bool{}
	for _, dir := range strings.Fields(string(out)) {
		inWorkspace[filepath.Clean(dir)] = true
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			mods = append(mods, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 2 {
		t.Fatalf("found %d go.mod files under %s, want the root's and the nested modules'", len(mods), root)
	}
	for _, dir := range mods {
		if !inWorkspace[dir] {
			t.Errorf("%s has a go.mod that go.work does not use: the test command skips it", dir)
		}
	}
	// Each workspace module's packages are matched by its pattern, as the
	// test command's shell expands it.
	var patterns []string
	for _, dir := range strings.Fields(string(out)) {
		patterns = append(patterns, dir+"/...")
	}
	pkgs, err := exec.Command("go", append([]string{"list", "-f", "{{.Module.Dir}}"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list of the test command's patterns: %v", err)
	}
	reached := map[string]bool{}
	for _, dir := range strings.Fields(string(pkgs)) {
		reached[filepath.Clean(dir)] = true
	}
	for _, dir := range mods {
		if !reached[dir] {
			t.Errorf("the test command's patterns match no package of the module in %s", dir)
		}
	}
}
