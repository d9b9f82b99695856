package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/plural"
)

// filterFields are the form fields of a job filter, as the jobs page's
// query names them.
var filterFields = []string{"state", "queue", "kind", "tenant", "serial_key", "error"}

// matchingAction retries, cancels or deletes every job the jobs page's
// filter matches (every page of it), after a confirmation that counts
// them: admin.Jobs.Matching counts, admin.Jobs.ApplyMatching acts within
// that count and the highest id counted, in batches of admin.BulkBatch.
func (d *dash) matchingAction(w http.ResponseWriter, r *http.Request) {
	q := url.Values{}
	for _, k := range filterFields {
		q.Set(k, r.PostFormValue(k))
	}
	f, err := filterFromQuery(q)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, "bad filter: "+err.Error())
		return
	}
	act := admin.BulkAction(r.PostFormValue("action"))
	if !confirmed(r) {
		m, err := d.ops.Jobs().Matching(r.Context(), d.pool, f, act)
		if d.bulkRefused(w, r, err) {
			return
		}
		c := confirmData{Action: "jobs/matching", Button: "Yes, " + string(act) + " them", Class: "danger", Count: m.Count, More: m.More,
			Fields: []field{{"action", string(act)}, {"max_id", strconv.FormatInt(m.MaxID, 10)}, {"return", returnPath(r)}}}
		for _, k := range filterFields {
			if v := q.Get(k); v != "" {
				c.Fields = append(c.Fields, field{k, v})
			}
		}
		c.What = matchingWhat(f, act, m.Count)
		c.Notes = []string{"Filter: " + describeFilter(f) + ". Jobs enqueued after this count, and running jobs, are left alone.",
			fmt.Sprintf("The work is done in batches of %s jobs, one statement each.", plural.Number(admin.BulkBatch))}
		d.confirm(w, r, fmt.Sprintf("%s %s?", title(string(act)), plural.Count(m.Count, "job", "jobs")), c)
		return
	}
	n, err := confirmedCount(r, admin.MaxMatching)
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	maxID, err := strconv.ParseInt(r.PostFormValue("max_id"), 10, 64)
	if err != nil || maxID <= 0 {
		d.fail(w, r, http.StatusBadRequest, "max_id: want the confirmation's highest job id")
		return
	}
	m := admin.Matching{Count: n, MaxID: maxID}
	if f.State == admin.StateDead && act == admin.BulkRetry {
		d.replayMatching(w, r, f, m)
		return
	}
	done, err := d.ops.Jobs().ApplyMatching(r.Context(), d.pool, f, act, m, admin.BulkOptions{Note: cancelNote})
	if d.bulkRefused(w, r, err) {
		return
	}
	d.logger(r).Info("dashboard: jobs "+string(act)+" matching", slog.Int64("jobs", done), slog.Int64("counted", n),
		slog.String("state", f.State), slog.String("queue", f.Queue), slog.String("kind", f.Kind))
	back(w, r, fmt.Sprintf("%s %s of the %s matching", pastTense[string(act)], plural.Count(done, "job", "jobs"), plural.Number(n)))
}

// bulkRefused answers a refused filter with 400, another error with 500,
// and reports whether it answered.
func (d *dash) bulkRefused(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, admin.ErrUnsafeFilter), errors.Is(err, admin.ErrInvalidFilter):
		d.fail(w, r, http.StatusBadRequest, trimDocket(err))
	default:
		d.internal(w, r, "the action on matching jobs", err)
	}
	return true
}

// matchingWhat says what an action on every matching job does.
func matchingWhat(f admin.JobFilter, act admin.BulkAction, n int64) string {
	jobs := plural.Count(n, "job", "jobs")
	switch {
	case act == admin.BulkRetry && f.State == admin.StateDead:
		return fmt.Sprintf("Replay %s: they go back to their queue and run again, at the replay rate (a task on the server: the Tasks page shows its progress and can stop it).", jobs)
	case act == admin.BulkRetry:
		return fmt.Sprintf("Run %s now: scheduled jobs become due now (ready and waiting ones have nothing to hurry and are not counted).", jobs)
	case act == admin.BulkCancel:
		return fmt.Sprintf("Cancel %s: they move to the dead letters with reason cancelled.", jobs)
	default:
		return fmt.Sprintf("Delete %s for good: they never run and leave no dead letter.", jobs)
	}
}

// describeFilter names a filter's fields for a person.
func describeFilter(f admin.JobFilter) string {
	s := "state " + f.State
	if f.State == "" {
		s = "every live state"
	}
	for _, p := range []struct{ name, v string }{{"queue", f.Queue}, {"kind", f.Kind}, {"tenant", f.Tenant}, {"serial key", f.SerialKey}, {"error contains", f.ErrorContains}} {
		if p.v != "" {
			s += fmt.Sprintf(", %s %q", p.name, p.v)
		}
	}
	return s
}

// replayMatching replays the dead jobs a filter matches, paced at
// Config.MaxReplayRate, as a task (tasks.go).
func (d *dash) replayMatching(w http.ResponseWriter, r *http.Request, f admin.JobFilter, m admin.Matching) {
	desc := describeFilter(f)
	_, err := d.tasks.start(d.logger(r), "replay-matching\x00"+desc, "replay of dead jobs, "+desc, m.Count, func(ctx context.Context, t *task) error {
		_, err := d.ops.Jobs().ApplyMatching(ctx, d.pool, f, admin.BulkRetry, m, admin.BulkOptions{Rate: d.cfg.MaxReplayRate,
			Progress: func(n int64) { t.done.Store(n) }})
		return err
	})
	if errors.Is(err, errTaskRunning) {
		back(w, r, "a replay of these dead jobs is already running: see Tasks")
		return
	}
	back(w, r, fmt.Sprintf("replay of up to %s started: see Tasks", plural.Count(m.Count, "dead job", "dead jobs")))
}
