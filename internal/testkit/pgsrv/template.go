package pgsrv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// initdbArgs are initdb's options after -D, the same for every cluster:
// one data directory made with them serves as the start of every other.
var initdbArgs = []string{"-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"}

// initData puts a newly initialised data directory at c.dataDir(): a copy
// of the template data directory made once by initdb for these binaries.
// initdb takes seconds (it bootstraps the catalogs through several server
// runs), a copy a fraction of one, and a test run starts a cluster per test
// binary and more in the tests that restart one.
func (c *Cluster) initData(ctx context.Context) error {
	tmpl, err := c.template(ctx)
	if err != nil {
		return err
	}
	if err := copyTree(tmpl, c.dataDir(), c.attr); err != nil {
		return fmt.Errorf("pgsrv: copy the template data directory %s: %w", tmpl, err)
	}
	return nil
}

// template returns the template data directory for c's binaries, making
// it first if needed. It lives in the system's temporary directory, named
// for the binaries, initdb's options and the user running them, and stays
// there for later runs; test processes that make it at the same time each
// make their own and the first rename wins. Remove it to have it made
// again.
func (c *Cluster) template(ctx context.Context) (string, error) {
	key, err := templateKey(c.bin)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), "docket-pg-template-"+key)
	data := filepath.Join(dir, "data")
	if isDataDir(data) {
		return data, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "docket-pg-template-new-")
	if err != nil {
		return "", fmt.Errorf("pgsrv: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if _, err := asServerUser(tmp); err != nil {
		return "", err
	}
	if err := c.run(ctx, "initdb", append([]string{"-D", filepath.Join(tmp, "data")}, initdbArgs...)...); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if isDataDir(data) { // another process made it meanwhile
			return data, nil
		}
		// A broken leftover (a cleaner took part of it): replace it.
		if err := os.RemoveAll(dir); err != nil {
			return "", fmt.Errorf("pgsrv: remove broken template %s: %w", dir, err)
		}
		if err := os.Rename(tmp, dir); err != nil && !isDataDir(data) {
			return "", fmt.Errorf("pgsrv: keep template data directory: %w", err)
		}
	}
	return data, nil
}

// templateKey names the template for the binaries in bin: a hash of their
// paths, sizes and modification times (an upgrade makes a new template),
// initdb's options and the effective user.
func templateKey(bin string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(bin, name))
		if err != nil {
			return "", fmt.Errorf("pgsrv: %w", err)
		}
		fmt.Fprintf(h, "%s %d %d\n", filepath.Join(bin, name), fi.Size(), fi.ModTime().UnixNano())
	}
	fmt.Fprintf(h, "%s\n%d\n", strings.Join(initdbArgs, " "), os.Geteuid())
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// isDataDir reports whether dir holds a complete data directory, as initdb
// leaves it.
func isDataDir(dir string) bool {
	for _, name := range []string{"PG_VERSION", "global/pg_control", "postgresql.conf", "pg_hba.conf"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// copyTree copies the directory src to dst (which must not exist) with
// the same modes, owned by attr's user when attr sets one (we are root and
// the server runs as another user).
func copyTree(src, dst string, attr *syscall.SysProcAttr) error {
	owner := func(string) error { return nil }
	if attr != nil && attr.Credential != nil {
		uid, gid := int(attr.Credential.Uid), int(attr.Credential.Gid)
		owner = func(path string) error { return os.Lchown(path, uid, gid) }
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, target, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a file, directory or symbolic link", path)
		}
		return owner(target)
	})
}

func copyFile(src, dst string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	_, err = io.Copy(out, in)
	return err
}
