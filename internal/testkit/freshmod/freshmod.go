// Package freshmod builds Go source in a fresh module that requires this
// one, as a user's program would: tests use it to show that a snippet
// compiles with Docket's public API alone, or that a misuse does not
// compile at all. It needs the go command and the module cache of the
// build that runs the test, and no network.
package freshmod

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Build writes files (name → Go source, package main) into a new module
// that requires github.com/docketq/docket from this checkout, runs go build
// in it and returns the command's combined output and error.
func Build(t testing.TB, files map[string]string) (string, error) {
	t.Helper()
	return BuildPackages(t, files)
}

// BuildPackages is Build for files in several packages of the new module:
// a name may hold a directory ("a/main.go"), and every package is built by
// one go build ./..., with extra flags first (such as "-gcflags=-e", which
// reports every compile error instead of the first ten).
func BuildPackages(t testing.TB, files map[string]string, flags ...string) (string, error) {
	t.Helper()
	root := moduleRoot(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// The new module requires what this one does, at the same versions, so
	// that go resolves the same pruned module graph as this module's build
	// did, from the go.mod files already in the module cache. Requiring
	// Docket alone would make it walk Docket's dependencies' own
	// requirements, whose go.mod files a fresh machine's cache lacks.
	body := regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(mod, nil)
	dir := t.TempDir()
	gomod := "module freshmod.example\n" + string(body) + "\nrequire github.com/docketq/docket v0.0.0\n\nreplace github.com/docketq/docket => " + root + "\n"
	write(t, filepath.Join(dir, "go.mod"), gomod)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))
	for name, src := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, path, src)
	}
	args := append(append([]string{"build"}, flags...), "./...")
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	// -mod=mod lets go add the indirect requirements from the module
	// cache; GOPROXY=off keeps it from reaching for the network.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func moduleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a module")
	}
	return filepath.Dir(gomod)
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
