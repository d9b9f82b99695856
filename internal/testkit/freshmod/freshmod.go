// Package freshmod builds Go source in a fresh module built against this
// checkout's modules, as a user's program would be: tests use it to show that a snippet
// compiles with Docket's public API alone, or that a misuse does not
// compile at all. It needs the go command and the module cache of the
// build that runs the test, and no network.
package freshmod

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build writes files (name → Go source, package main) into a new module
// built against this checkout's Docket, runs go build in it and returns the
// command's combined output and error.
func Build(t testing.TB, files map[string]string) (string, error) {
	t.Helper()
	return BuildPackages(t, files)
}

// BuildPackages is Build for files in several packages of the new module:
// a name may hold a directory ("a/main.go"), and every package is built by
// one go build ./..., with extra flags first (such as "-gcflags=-e", which
// reports every compile error instead of the first ten).
//
// The new module joins a workspace of its own with every module of this
// checkout's go.work (Docket, its relay publishers, ent…), so it builds
// against this checkout and the versions its modules require, from the
// module cache, as the checkout's own build does.
func BuildPackages(t testing.TB, files map[string]string, flags ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module freshmod.example\n\ngo "+goVersion(t)+"\n")
	work := "go " + goVersion(t) + "\n\nuse (\n\t.\n"
	for _, m := range workspaceModules(t) {
		work += "\t" + m + "\n"
	}
	write(t, filepath.Join(dir, "go.work"), work+")\n")
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
	// GOPROXY=off keeps go from reaching for the network: everything it
	// needs is in this checkout and the module cache.
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOPROXY=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// workspaceModules returns the absolute directories of this checkout's
// modules: those its go.work uses, or, without one, the module the test
// runs in.
func workspaceModules(t testing.TB) []string {
	t.Helper()
	work := goEnv(t, "GOWORK")
	if work == "" || work == "off" {
		gomod := goEnv(t, "GOMOD")
		if gomod == "" || gomod == os.DevNull {
			t.Fatal("freshmod: not inside a module")
		}
		return []string{filepath.Dir(gomod)}
	}
	out, err := exec.Command("go", "work", "edit", "-json", work).Output()
	if err != nil {
		t.Fatalf("freshmod: go work edit -json: %v", err)
	}
	var w struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, u := range w.Use {
		d := u.DiskPath
		if !filepath.IsAbs(d) {
			d = filepath.Join(filepath.Dir(work), d)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// goVersion is the go line of the checkout's root module.
func goVersion(t testing.TB) string {
	t.Helper()
	mods := workspaceModules(t)
	out, err := exec.Command("go", "mod", "edit", "-json", filepath.Join(mods[0], "go.mod")).Output()
	if err != nil {
		t.Fatalf("freshmod: go mod edit -json: %v", err)
	}
	var m struct{ Go string }
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m.Go
}

func goEnv(t testing.TB, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("freshmod: go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
