package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:generate go run ./internal/assetsync

// assets are the pages' scripts and styles: our own (app.js, app.css) and
// the pinned libraries listed in assets.lock.
//
//go:embed assets
var assets embed.FS

//go:embed templates
var templates embed.FS

func assetServer() http.Handler {
	sub, _ := fs.Sub(assets, "assets") // the directory is embedded
	return http.FileServerFS(sub)
}
