package dashboard

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/plural"
)

// limitRow is a limit of the limits page with its keys now.
type limitRow struct {
	admin.Limit
	Keys []admin.LimitUsage
	// Running is how many of its jobs run now, over its keys.
	Running int
}

func (d *dash) limits(w http.ResponseWriter, r *http.Request) {
	rows, err := d.limitRows(r)
	if err != nil {
		d.internal(w, r, "reading the limits", err)
		return
	}
	d.render(w, r, "limits", view{Title: "Limits", Nav: "limits", Data: rows})
}

// limitRows reads the limits and their keys' usage, as docket limits list.
func (d *dash) limitRows(r *http.Request) ([]limitRow, error) {
	list, err := d.ops.Limits().List(r.Context(), d.pool)
	if err != nil {
		return nil, err
	}
	usage, err := d.ops.Limits().Usage(r.Context(), d.pool)
	if err != nil {
		return nil, err
	}
	rows := make([]limitRow, len(list))
	for i, l := range list {
		rows[i].Limit = l
		for _, u := range usage {
			if u.Limit == l.Name {
				rows[i].Keys = append(rows[i].Keys, u)
				rows[i].Running += u.Running
			}
		}
	}
	return rows, nil
}

// limitFromForm reads a limit from the set form, as docket limits set
// takes it: rate per a duration ("1s", "1m").
func limitFromForm(r *http.Request) (admin.Limit, error) {
	l := admin.Limit{Name: strings.TrimSpace(r.PostFormValue("name")), PerTenant: r.PostFormValue("per_tenant") == "1"}
	switch scope, value := r.PostFormValue("scope"), strings.TrimSpace(r.PostFormValue("scope_value")); scope {
	case "kind":
		l.Kind = value
	case "queue":
		l.Queue = value
	case "all":
	default:
		return l, fmt.Errorf("scope %q: want kind, queue or all", scope)
	}
	for _, f := range []struct {
		name string
		to   *int
	}{{"max_running", &l.MaxRunning}, {"rate", &l.Rate}, {"burst", &l.Burst}} {
		s := strings.TrimSpace(r.PostFormValue(f.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return l, fmt.Errorf("%s: want a whole number", strings.ReplaceAll(f.name, "_", " "))
		}
		*f.to = n
	}
	if s := strings.TrimSpace(r.PostFormValue("per")); s != "" && l.Rate != 0 {
		per, err := time.ParseDuration(s)
		if err != nil {
			return l, errors.New("per: want a duration such as 1s or 1m")
		}
		l.Per = per
	}
	return l, l.Check()
}

// setLimit creates or replaces a limit, as docket limits set. Replacing
// one is confirmed: its rate buckets start afresh.
func (d *dash) setLimit(w http.ResponseWriter, r *http.Request) {
	l, err := limitFromForm(r)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, "limit: "+strings.TrimPrefix(err.Error(), "docket: "))
		return
	}
	if err := d.ops.Limits().Set(r.Context(), d.pool, l); err != nil {
		if errors.Is(err, admin.ErrInvalidLimit) {
			d.fail(w, r, http.StatusBadRequest, trimDocket(err))
			return
		}
		d.internal(w, r, "setting the limit", err)
		return
	}
	d.logger(r).Info("dashboard: limit set", slog.String("limit", l.Name))
	back(w, r, fmt.Sprintf("limit %s set: %s; workers apply it within one poll interval", l.Name, l.Describe()))
}

// removeLimit removes a limit, as docket limits rm, after a confirmation
// that says what it governs now.
func (d *dash) removeLimit(w http.ResponseWriter, r *http.Request) {
	name := r.PostFormValue("name")
	if err := (admin.Limit{Name: name, MaxRunning: 1}).Check(); err != nil {
		d.fail(w, r, http.StatusBadRequest, "limit: "+strings.TrimPrefix(err.Error(), "docket: "))
		return
	}
	if !confirmed(r) {
		rows, err := d.limitRows(r)
		if err != nil {
			d.internal(w, r, "reading the limits", err)
			return
		}
		var row *limitRow
		for i := range rows {
			if rows[i].Name == name {
				row = &rows[i]
			}
		}
		if row == nil {
			d.fail(w, r, http.StatusNotFound, fmt.Sprintf("no limit named %q", name))
			return
		}
		d.confirm(w, r, "Remove limit "+name+"?", confirmData{Action: "limits/remove", Button: "Yes, remove", Class: "danger", Count: 1,
			What: fmt.Sprintf("Remove limit %s (%s): workers stop applying it within one poll interval.", name, row.Describe()),
			Notes: []string{fmt.Sprintf("It governs %s running now, over %s.", plural.Count(int64(row.Running), "job", "jobs"), plural.Count(int64(len(row.Keys)), "key", "keys")),
				"The jobs it holds back then start as fast as workers claim them, under a less specific limit if one matches (their queue's, or the global one)."},
			Fields: []field{{"name", name}, {"return", returnPath(r)}}})
		return
	}
	if _, err := confirmedCount(r, 1); err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	removed, err := d.ops.Limits().Remove(r.Context(), d.pool, name)
	if err != nil {
		d.internal(w, r, "removing the limit", err)
		return
	}
	if !removed {
		back(w, r, fmt.Sprintf("no limit named %s: removed already", name))
		return
	}
	d.logger(r).Info("dashboard: limit removed", slog.String("limit", name))
	back(w, r, fmt.Sprintf("removed limit %s; workers stop applying it within one poll interval", name))
}
