package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:generate go run ./internal/assetsync

// assets are the pages' scripts, styles and icon: our own (app.js,
// app.css, favicon.svg) and the pinned libraries listed in assets.lock.
//
//go:embed assets
var assets embed.FS

//go:embed templates
var templates embed.FS

// asset is one embedded file as it is served: its bytes, gzipped when that
// makes it smaller, and the start of its sha256, which its URL carries.
type asset struct {
	data, gz []byte
	hash     string
	ctype    string
}

// assetIndex holds every embedded asset by name, read once at start.
var assetIndex = func() map[string]*asset {
	out := map[string]*asset{}
	entries, _ := fs.ReadDir(assets, "assets") // the directory is embedded
	for _, e := range entries {
		data, err := assets.ReadFile("assets/" + e.Name())
		if err != nil || e.IsDir() {
			continue
		}
		sum := sha256.Sum256(data)
		a := &asset{data: data, hash: hex.EncodeToString(sum[:6]), ctype: mime.TypeByExtension(path.Ext(e.Name()))}
		if a.ctype == "" {
			a.ctype = "application/octet-stream"
		}
		if strings.HasPrefix(a.ctype, "text/") || strings.Contains(a.ctype, "javascript") || strings.Contains(a.ctype, "svg") {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			zw.Write(data)
			zw.Close()
			if b.Len() < len(data) {
				a.gz = b.Bytes()
			}
		}
		out[e.Name()] = a
	}
	return out
}()

// assetURL is the fingerprinted URL of an asset, relative to the pages'
// <base>: "assets/app.js?v=<hash>". A new build with a changed file gets a
// new URL, so browsers may keep each URL forever.
func assetURL(name string) string {
	a, ok := assetIndex[name]
	if !ok {
		panic("dashboard: no embedded asset " + name) // a template names a file that is not there
	}
	return "assets/" + name + "?v=" + a.hash
}

// serveAsset serves an embedded asset. Asked for by its fingerprinted URL
// (the current ?v=), it may be cached for a year without revalidation
// (immutable); by another URL, it must be revalidated (ETag). It is sent
// gzipped to clients that accept it. Brotli is left out: it would need a
// dependency outside the standard library to save a few more kilobytes on
// files cached once a year.
func serveAsset(w http.ResponseWriter, r *http.Request, a *asset) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", `"`+a.hash+`"`)
	h.Set("Vary", "Accept-Encoding")
	if r.URL.Query().Get("v") == a.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, `"`+a.hash+`"`) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.data
	if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// acceptsGzip reads an Accept-Encoding header: gzip (or *) listed without
// q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
			return false
		}
		return true
	}
	return false
}

// assetHandler serves /assets/{name}.
func (d *dash) assetHandler(w http.ResponseWriter, r *http.Request) {
	a, ok := assetIndex[r.PathValue("name")]
	if !ok {
		d.fail(w, r, http.StatusNotFound, "no such file")
		return
	}
	serveAsset(w, r, a)
}

// favicon serves the icon at /favicon.ico, where browsers look when a page
// names none (the pages name assets/favicon.svg).
func (d *dash) favicon(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, assetIndex["favicon.svg"])
}
