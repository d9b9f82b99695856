package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A destructive action (cancel, delete, purge, a group's replay or
// discard, an action on every job a filter matches) is two POSTs. The
// first changes nothing: it counts what the action would touch and answers
// with a confirmation page, whose form repeats the request with confirm=1,
// the count and the bound that keeps the action to what was counted (the
// selected ids that can be acted on, a highest job id, a death time). The
// second acts on at most that many rows. Both go through d.action: CSRF,
// Origin, read-only.

// confirmData is the confirmation page.
type confirmData struct {
	// What says what the action does, in a sentence.
	What string
	// Count is how many rows it touches at most; More says the count
	// stopped at a bound and the action touches only Count of them.
	Count int64
	More  bool
	// Notes are the details: what is left alone and why.
	Notes []string
	// Action is the form's path (relative to the mount), Fields its
	// hidden fields, Button the confirm button's text, Class its style.
	Action, Button, Class string
	Fields                []field
	// Back is where "go back" leads (relative to the mount).
	Back string
}

type field struct{ Name, Value string }

// confirmed reports whether the request is the confirmation's POST.
func confirmed(r *http.Request) bool { return r.PostFormValue("confirm") == "1" }

// confirm answers with the confirmation page of c; nothing changed.
func (d *dash) confirm(w http.ResponseWriter, r *http.Request, title string, c confirmData) {
	c.Back = relative(returnPath(r))
	c.Fields = append(c.Fields, field{"confirm", "1"}, field{"count", strconv.FormatInt(c.Count, 10)})
	d.render(w, r, "confirm", view{Title: title, Nav: "", Data: c})
}

// confirmedCount reads the count a confirmation carries: how many rows
// the action may touch, 1 to most.
func confirmedCount(r *http.Request, most int64) (int64, error) {
	n, err := strconv.ParseInt(r.PostFormValue("count"), 10, 64)
	if err != nil || n < 1 || n > most {
		return 0, fmt.Errorf("count: want the confirmation's count, 1 to %d", most)
	}
	return n, nil
}

// confirmedTime reads a time a confirmation carries (Unix nanoseconds).
func confirmedTime(r *http.Request, name string) (time.Time, error) {
	n, err := strconv.ParseInt(r.PostFormValue(name), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, fmt.Errorf("%s: want the confirmation's time", name)
	}
	return time.Unix(0, n), nil
}

// returnPath is the page an action returns to: a path of this dashboard
// (never another site), "/" when the form names none.
func returnPath(r *http.Request) string {
	to := r.PostFormValue("return")
	if !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "//") || strings.Contains(to, "\\") {
		return "/"
	}
	return to
}

// relative turns a dashboard path ("/jobs?x") into a link relative to the
// pages' <base> (the mount prefix).
func relative(p string) string {
	if p = strings.TrimPrefix(p, "/"); p == "" {
		return "./"
	}
	return p
}
