package dashboard_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/docketq/docket/dashboard"
)

var assetRef = regexp.MustCompile(`(?:href|src)="(assets/[^"?]+\?v=[0-9a-f]+)"`)

// Assets are served under fingerprinted URLs, cached for a year as
// immutable and gzipped for clients that accept it; pages are never
// cached; /favicon.ico is the embedded icon.
func TestAssetCaching(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{})
	// A plain client: no transparent gzip, so the test sees the wire.
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	fetch := func(u, encoding string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	page, body := fetch(b.Srv.URL+"/", "gzip")
	if cc := page.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("page Cache-Control %q, want no-store", cc)
	}
	refs := assetRef.FindAllStringSubmatch(string(body), -1)
	if len(refs) != 5 {
		t.Fatalf("%d fingerprinted assets on the overview, want 5 (icon, 2 styles, 2 scripts):\n%s", len(refs), body)
	}
	for _, m := range refs {
		u := b.Srv.URL + "/" + m[1]
		plain, raw := fetch(u, "")
		if plain.StatusCode != http.StatusOK || plain.Header.Get("Content-Encoding") != "" ||
			plain.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: %d, encoding %q, Cache-Control %q", m[1], plain.StatusCode, plain.Header.Get("Content-Encoding"), plain.Header.Get("Cache-Control"))
		}
		if plain.Header.Get("Content-Security-Policy") == "" || plain.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s lost the security headers", m[1])
		}
		zipped, gz := fetch(u, "br, gzip;q=0.8")
		if zipped.Header.Get("Content-Encoding") != "gzip" || zipped.Header.Get("Vary") != "Accept-Encoding" || len(gz) >= len(raw) {
			t.Errorf("GET %s accepting gzip: encoding %q, Vary %q, %d bytes of %d", m[1], zipped.Header.Get("Content-Encoding"), zipped.Header.Get("Vary"), len(gz), len(raw))
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		unzipped, _ := io.ReadAll(zr)
		if !bytes.Equal(unzipped, raw) {
			t.Errorf("GET %s: the gzipped body is not the file", m[1])
		}
		if refused, _ := fetch(u, "gzip;q=0, identity"); refused.Header.Get("Content-Encoding") != "" {
			t.Errorf("GET %s with gzip;q=0: gzipped anyway", m[1])
		}
		if nm, _ := fetch(u, "gzip", "If-None-Match", plain.Header.Get("ETag")); nm.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", m[1], nm.StatusCode)
		}
		// An old or missing fingerprint is served, but not kept.
		stale, _ := fetch(strings.Split(u, "?")[0]+"?v=0123456789ab", "")
		if stale.StatusCode != http.StatusOK || stale.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s with another fingerprint: %d, Cache-Control %q", m[1], stale.StatusCode, stale.Header.Get("Cache-Control"))
		}
	}
	icon, data := fetch(b.Srv.URL+"/favicon.ico", "")
	if icon.StatusCode != http.StatusOK || icon.Header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(data, []byte("<svg")) {
		t.Errorf("GET /favicon.ico: %d %q", icon.StatusCode, icon.Header.Get("Content-Type"))
	}
	if missing, _ := fetch(b.Srv.URL+"/assets/nope.js", ""); missing.StatusCode != http.StatusNotFound || missing.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("GET a missing asset: %d %q", missing.StatusCode, missing.Header.Get("Cache-Control"))
	}
}
