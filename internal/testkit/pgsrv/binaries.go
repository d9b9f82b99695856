package pgsrv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// errNoBinaries is returned when no initdb/pg_ctl/postgres trio is found.
var errNoBinaries = errors.New("no PostgreSQL binaries (initdb, pg_ctl, postgres) on PATH or under /usr/lib/postgresql/*/bin; " +
	"install PostgreSQL (Debian/Ubuntu: apt-get install postgresql; Fedora: dnf install postgresql-server; macOS: brew install postgresql) " +
	"or set DATABASE_URL to a server where you may create databases")

// debianBinGlob is where Debian and Ubuntu install server binaries, one
// directory per major version; they are not on PATH there.
var debianBinGlob = "/usr/lib/postgresql/*/bin"

// findBinaries returns a directory holding initdb, pg_ctl and postgres: the
// one of the initdb on PATH (symlinks resolved, as pg_ctl finds postgres next
// to its real path), else the highest version under debianBinGlob.
func findBinaries() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	found, _ := filepath.Glob(debianBinGlob)
	slices.SortFunc(found, func(a, b string) int { // highest version first
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	dirs = append(dirs, found...)
	for _, d := range dirs {
		if hasServerBinaries(d) {
			return d, nil
		}
	}
	return "", errNoBinaries
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// compareVersions compares dotted version strings numerically ("9.6" < "15").
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
