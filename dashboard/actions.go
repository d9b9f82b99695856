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

// maxBulk bounds the jobs one bulk action touches: a page's worth.
const maxBulk = admin.MaxJobPage

// jobAction runs retry, cancel or delete on the selected jobs (field id,
// repeated), each through the operation docket jobs uses, and reports what
// happened to each: retry and delete refuse a running job; cancel asks its
// worker to stop it (admin Jobs.Cancel).
func (d *dash) jobAction(w http.ResponseWriter, r *http.Request) {
	verb := r.PostFormValue("action")
	var op func(id int64) error
	var requested int64 // running jobs whose cancellation was requested
	ctx := r.Context()
	switch verb {
	case "retry":
		op = func(id int64) error { return d.ops.Jobs().Retry(ctx, d.pool, id) }
	case "cancel":
		op = func(id int64) error {
			running, err := d.ops.Jobs().Cancel(ctx, d.pool, id, "cancelled from the dashboard")
			if running {
				requested++
			}
			return err
		}
	case "delete":
		op = func(id int64) error { return d.ops.Jobs().Delete(ctx, d.pool, id) }
	default:
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("unknown action %q: want retry, cancel or delete", verb))
		return
	}
	raw := r.PostForm["id"]
	if len(raw) == 0 {
		back(w, r, "select jobs first")
		return
	}
	if len(raw) > maxBulk {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%d jobs selected: at most %d at once", len(raw), maxBulk))
		return
	}
	ids := make([]int64, len(raw))
	for i, s := range raw {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("job id %q is not a positive number", s))
			return
		}
		ids[i] = id
	}
	var done int64
	var refused []string
	for _, id := range ids {
		err := op(id)
		switch {
		case err == nil:
			done++
			d.logger(r).Info("dashboard: job "+verb, slog.Int64("job", id))
		case errors.Is(err, admin.ErrJobRunning), errors.Is(err, admin.ErrJobNotFound):
			refused = append(refused, fmt.Sprintf("job %d: %s", id, strings.TrimPrefix(err.Error(), "docket: ")))
		default:
			d.internal(w, r, verb, err)
			return
		}
	}
	msg := fmt.Sprintf("%s: %s", verb, plural.Count(done, "job", "jobs"))
	if requested > 0 {
		msg += fmt.Sprintf(" (%d running: cancellation requested, their workers stop them)", requested)
	}
	if len(refused) > 0 {
		msg += "; refused " + strings.Join(refused, "; ")
	}
	back(w, r, msg)
}

// queueAction pauses or resumes a queue.
func (d *dash) queueAction(w http.ResponseWriter, r *http.Request) {
	queue, verb := r.PostFormValue("queue"), r.PostFormValue("action")
	var err error
	switch verb {
	case "pause":
		err = d.ops.Queues().Pause(r.Context(), d.pool, queue)
	case "resume":
		err = d.ops.Queues().Resume(r.Context(), d.pool, queue)
	default:
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("unknown action %q: want pause or resume", verb))
		return
	}
	if errors.Is(err, admin.ErrInvalidName) {
		d.fail(w, r, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "docket: "))
		return
	}
	// The pages offer only queues in use; a name from elsewhere (or a queue
	// whose last trace went since the page was drawn) is not created.
	if errors.Is(err, admin.ErrUnknownQueue) {
		d.fail(w, r, http.StatusNotFound, strings.TrimPrefix(err.Error(), "docket: "))
		return
	}
	if err != nil {
		d.internal(w, r, verb+" queue", err)
		return
	}
	d.logger(r).Info("dashboard: queue "+verb, slog.String("queue", queue))
	back(w, r, fmt.Sprintf("queue %s: %sd", queue, verb))
}

// replayGroup replays the dead letters of one kind and error at a rate of
// at most Config.MaxReplayRate, as docket dlq replay does, for at most 30
// seconds: a larger group is replayed in several clicks. Leaving the page
// stops it between batches.
func (d *dash) replayGroup(w http.ResponseWriter, r *http.Request) {
	g := admin.DeadGroup{Kind: r.PostFormValue("kind"), Error: r.PostFormValue("error")}
	f, ok := g.Filter()
	if g.Kind == "" || !ok {
		d.fail(w, r, http.StatusBadRequest, "a group is a kind and an error")
		return
	}
	rate, err := strconv.ParseFloat(r.PostFormValue("rate"), 64)
	if err != nil || rate <= 0 || rate > d.cfg.MaxReplayRate {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("rate: want 0 to %g jobs per second", d.cfg.MaxReplayRate))
		return
	}
	f.Limit = max(1, int(rate*30))
	res, err := d.ops.DeadLetters().Replay(r.Context(), d.pool, f, admin.ReplayOptions{Rate: rate})
	if err != nil {
		d.internal(w, r, "replay", err)
		return
	}
	d.logger(r).Info("dashboard: replay", slog.String("kind", g.Kind), slog.Int("replayed", len(res.Replayed)))
	msg := fmt.Sprintf("%s of kind %s replayed", plural.Count(int64(len(res.Replayed)), "dead job", "dead jobs"), g.Kind)
	if len(res.Skipped) > 0 {
		msg += fmt.Sprintf("; %d skipped (unique key held by a live job, or replayed by someone else)", len(res.Skipped))
	}
	back(w, r, msg)
}

// purge deletes the dead letters that died before a duration ago.
func (d *dash) purge(w http.ResponseWriter, r *http.Request) {
	age, err := time.ParseDuration(r.PostFormValue("older_than"))
	if err != nil || age < 0 {
		d.fail(w, r, http.StatusBadRequest, "older than: want a duration such as 168h")
		return
	}
	n, err := d.ops.DeadLetters().Purge(r.Context(), d.pool, time.Now().Add(-age))
	if err != nil {
		d.internal(w, r, "purge", err)
		return
	}
	d.logger(r).Info("dashboard: purge", slog.Int64("deleted", n), slog.Duration("older_than", age))
	back(w, r, fmt.Sprintf("purged %s", plural.Count(n, "dead job", "dead jobs")))
}

// scheduleAction pauses, resumes or triggers a schedule.
func (d *dash) scheduleAction(w http.ResponseWriter, r *http.Request) {
	name, verb := r.PostFormValue("name"), r.PostFormValue("action")
	ctx := r.Context()
	var err error
	msg := fmt.Sprintf("schedule %s: %sd", name, verb)
	switch verb {
	case "pause":
		err = d.ops.Schedules().Pause(ctx, d.pool, name)
	case "resume":
		err = d.ops.Schedules().Resume(ctx, d.pool, name)
	case "trigger":
		var id int64
		id, err = d.ops.Schedules().Trigger(ctx, d.pool, name)
		msg = fmt.Sprintf("schedule %s: triggered as job %d", name, id)
	default:
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("unknown action %q: want pause, resume or trigger", verb))
		return
	}
	if err != nil {
		d.logger(r).Warn("dashboard: schedule "+verb, slog.String("schedule", name), slog.String("error", err.Error()))
		back(w, r, fmt.Sprintf("schedule %s: %s failed: %s", name, verb, strings.TrimPrefix(err.Error(), "docket: ")))
		return
	}
	d.logger(r).Info("dashboard: schedule "+verb, slog.String("schedule", name))
	back(w, r, msg)
}
