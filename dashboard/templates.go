package dashboard

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/plural"
)

// pageNames are the templates/<name>.html files; each is parsed with
// templates/layout.html, which defines "page" around the file's "content".
var pageNames = []string{"overview", "jobs", "job", "dead", "schedules", "workers", "confirm", "tasks", "error",
	"limits", "workflows", "workflow"}

// funcs are the formatting functions every page uses, so that a count, a
// time and a duration read the same on each. Times are UTC (the header
// says so once); tables show them relative, with the absolute time as the
// title:
//
//	{{num .Jobs}}              1,234 (any integer)
//	{{count .Ready .Capped}}   10,000+ when capped
//	{{noun .N "job" "jobs"}}   the noun that agrees with .N
//	{{stamp .RunAt}}           <time title="2026-11-27 03:04:05 UTC">3 min ago</time>
//	{{ago .RunAt}}             "3 min ago", "in 2 h", "–" for the zero time
//	{{when .RunAt}}            2026-11-27 03:04:05 (UTC), "–" for the zero time
//	{{dur .Lag}}               "3 d 16 h", "4 min 12 s", "850 ms"
//	{{ms .ClaimP50}}           "1.2 ms", "–" for zero
//	{{clip .LastError}}        an error's first line, at most 120 characters
//	{{asset "app.css"}}        an embedded file's fingerprinted URL
var funcs = template.FuncMap{
	"num": num,
	// count prints a count with thousands separators, and a "+" when
	// it stopped at a limit and is a lower bound: "10,000+".
	"count": func(n int64, capped bool) string {
		if capped {
			return plural.Number(n) + "+"
		}
		return plural.Number(n)
	},
	// noun agrees a noun with a count of any integer type.
	"noun": func(n any, one, many string) string {
		i, _ := integer(n)
		return plural.Noun(i, one, many)
	},
	"stamp": stamp,
	"ago":   ago,
	"when":  when,
	"dur":   dur,
	"ms": func(d time.Duration) string {
		if d == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	},
	"clip":  clipError,
	"asset": assetURL,
	// since is how long ago t was.
	"since": time.Since,
	// countLimit is where the jobs page's counts stop.
	"countLimit": func() int64 { return admin.CountLimit },
	// add sums two coordinates of the workflow graph.
	"add": func(a, b int) int { return a + b },
	// indent indents a JSON payload as the job page does.
	"indent": func(raw []byte) string { return indentJSON(raw) },
	// limitForm is what a limit's remove form needs.
	"limitForm": func(v view, name string) struct{ CSRF, Name string } {
		return struct{ CSRF, Name string }{v.CSRF, name}
	},
}

func parsePages() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templates, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// num prints an integer of any Go integer type with thousands separators:
// 1234567 is "1,234,567". Anything else is printed as fmt's %v does.
func num(n any) string {
	if i, ok := integer(n); ok {
		return plural.Number(i)
	}
	return fmt.Sprint(n)
}

// integer converts any Go integer that fits an int64.
func integer(n any) (int64, bool) {
	switch v := n.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint:
		return int64(v), v <= 1<<63-1
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		return int64(v), v <= 1<<63-1
	}
	return 0, false
}

// when prints a time in UTC to the second; "–" for the zero time. The
// page header says the times are UTC, so the time itself does not.
func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// stamp is a time for a table cell: relative ("3 min ago"), in a <time>
// element whose title is the absolute UTC time; "–" for the zero time.
func stamp(t time.Time) template.HTML {
	if t.IsZero() {
		return "–"
	}
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + when(t) + ` UTC">` + ago(t) + `</time>`)
}

// ago prints how long ago, or in how long, t is: "3 min ago", "in 2 h";
// "–" for the zero time, "now" within a second.
func ago(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	d := time.Since(t)
	switch {
	case d > -time.Second && d < time.Second:
		return "now"
	case d < 0:
		return "in " + dur(-d)
	}
	return dur(d) + " ago"
}

// dur prints a duration as a person reads it, in its two largest units:
// "3 d 16 h", "2 h 5 min", "4 min 12 s", "12 s", "850 ms"; "0 s" for zero
// or less.
func dur(d time.Duration) string {
	if d <= 0 {
		return "0 s"
	}
	if d < time.Second {
		return strconv.FormatInt(int64(d.Round(time.Millisecond)/time.Millisecond), 10) + " ms"
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}}
	d = d.Round(time.Second)
	for i, u := range units {
		if d < u.size {
			continue
		}
		if i == len(units)-1 {
			return strconv.FormatInt(int64(d/u.size), 10) + " " + u.name
		}
		next := units[i+1]
		d = d.Round(next.size)
		if i > 0 && d >= units[i-1].size { // 23 h 59 min 40 s is 1 d
			return dur(d)
		}
		parts := []string{plural.Number(int64(d/u.size)) + " " + u.name}
		if rest := d % u.size / next.size; rest > 0 {
			parts = append(parts, strconv.FormatInt(int64(rest), 10)+" "+next.name)
		}
		return strings.Join(parts, " ")
	}
	return "0 s"
}
