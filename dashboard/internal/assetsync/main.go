// Command assetsync fetches the dashboard's pinned front-end libraries from
// the npm registry into dashboard/assets and records their checksums in
// dashboard/assets.lock. Run it with `go generate ./dashboard` after
// changing a version in the lock file.
//
// Each tarball is checked against the integrity (sha512) the registry
// publishes for that version before a file is taken from it.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const registry = "https://registry.npmjs.org/"

func main() {
	if err := run("assets.lock", "assets"); err != nil {
		fmt.Fprintln(os.Stderr, "assetsync:", err)
		os.Exit(1)
	}
}

func run(lockPath, dir string) error {
	lock, err := os.ReadFile(lockPath)
	if err != nil {
		return err
	}
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(lock))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		if len(f) != 4 {
			return fmt.Errorf("%s: want file, package@version, path, sha256: %q", lockPath, line)
		}
		data, err := fetch(f[1], f[2])
		if err != nil {
			return fmt.Errorf("%s: %w", f[0], err)
		}
		if err := os.WriteFile(filepath.Join(dir, f[0]), data, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&out, "%s %s %s %s\n", f[0], f[1], f[2], hex.EncodeToString(sum[:]))
		fmt.Printf("%s: %s %s (%d bytes)\n", f[0], f[1], f[2], len(data))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return os.WriteFile(lockPath, []byte(out.String()), 0o644)
}

// fetch returns the file at path inside the tarball of pkg ("name@version").
func fetch(pkg, path string) ([]byte, error) {
	name, version, ok := strings.Cut(pkg, "@")
	if !ok || name == "" || version == "" {
		return nil, fmt.Errorf("package %q: want name@version", pkg)
	}
	meta, err := get(registry + name + "/" + version)
	if err != nil {
		return nil, err
	}
	var v struct {
		Dist struct{ Tarball, Integrity string }
	}
	if err := json.Unmarshal(meta, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	algo, want, _ := strings.Cut(v.Dist.Integrity, "-")
	if algo != "sha512" {
		return nil, fmt.Errorf("%s: registry gives no sha512 integrity", pkg)
	}
	tgz, err := get(v.Dist.Tarball)
	if err != nil {
		return nil, err
	}
	if sum := sha512.Sum512(tgz); base64.StdEncoding.EncodeToString(sum[:]) != want {
		return nil, fmt.Errorf("%s: tarball does not match the registry's integrity", pkg)
	}
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: no %s in the package", pkg, path)
		}
		if err != nil {
			return nil, err
		}
		if h.Name == "package/"+path {
			return io.ReadAll(tr)
		}
	}
}

func get(url string) ([]byte, error) {
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
