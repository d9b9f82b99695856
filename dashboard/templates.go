package dashboard

import (
	"fmt"
	"html/template"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/plural"
)

// pageNames are the templates/<name>.html files; each is parsed with
// templates/layout.html, which defines "page" around the file's "content".
var pageNames = []string{"overview", "jobs", "job", "dead", "schedules", "workers", "confirm", "tasks", "error"}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"when": when,
		"ago":  ago,
		"dur":  dur,
		// count prints a count with thousands separators, and a "+" when
		// it stopped at a limit and is a lower bound: "10,000+".
		"count": func(n int64, capped bool) string {
			if capped {
				return plural.Number(n) + "+"
			}
			return plural.Number(n)
		},
		// since is how long ago t was.
		"since": time.Since,
		// countLimit is where the jobs page's counts stop.
		"countLimit": func() int64 { return admin.CountLimit },
		// noun agrees a noun with a count: noun 1 "live worker" "live workers".
		"noun": plural.Noun,
		// clip cuts an error for a table cell: its first line, at most
		// 120 characters; the job page shows it whole.
		"clip": clipError,
		// asset is an embedded file's fingerprinted URL.
		"asset": assetURL,
		"ms": func(d time.Duration) string {
			if d == 0 {
				return "–"
			}
			return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
		},
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templates, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// when prints a time in UTC to the second; "–" for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago prints how long ago (or, negative, in how long) t is.
func ago(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	d := time.Since(t)
	if d < 0 {
		return "in " + dur(-d)
	}
	return dur(d) + " ago"
}

// dur prints a duration at a precision a person reads.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}
