package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/plural"
)

// maxBulk bounds the jobs one bulk action on a selection touches: a
// page's worth.
const maxBulk = admin.MaxJobPage

// cancelNote is the error a job cancelled from the dashboard is given.
const cancelNote = "cancelled from the dashboard"

// jobAction runs retry, cancel or delete on the selected jobs (field id,
// repeated), each through the operation docket jobs uses, and reports what
// happened: retry and delete refuse a running job, never touching it;
// cancel asks its worker to stop it (admin Jobs.Cancel). Cancel and delete
// are confirmed first: the preview counts the selected jobs they can act
// on, and the confirmation carries those ids only.
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
			running, err := d.ops.Jobs().Cancel(ctx, d.pool, id, cancelNote)
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
	if verb != "retry" && !confirmed(r) {
		d.confirmJobs(w, r, verb, ids)
		return
	}
	if verb != "retry" {
		if _, err := confirmedCount(r, int64(len(ids))); err != nil {
			d.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
	}
	var done int64
	var running, gone []int64
	for _, id := range ids {
		err := op(id)
		switch {
		case err == nil:
			done++
			d.logger(r).Info("dashboard: job "+verb, slog.Int64("job", id))
		case errors.Is(err, admin.ErrJobRunning):
			running = append(running, id)
		case errors.Is(err, admin.ErrJobNotFound):
			gone = append(gone, id)
		default:
			d.internal(w, r, verb, err)
			return
		}
	}
	msg := fmt.Sprintf("%s %s", pastTense[verb], plural.Count(done, "job", "jobs"))
	if requested > 0 {
		msg += fmt.Sprintf(" (%d running: cancellation requested, their workers stop them)", requested)
	}
	if len(ids) == 1 && done == 0 {
		// From the job's own page, whose title names it.
		switch {
		case len(running) == 1:
			msg = "not " + pastTense[verb] + ": the job is running"
		case len(gone) == 1:
			msg = "not " + pastTense[verb] + ": the job is gone"
		}
	} else if refused := refusals(running, gone); refused != "" {
		msg += "; not " + pastTense[verb] + ": " + refused
	}
	to := returnPath(r)
	// A deleted job has no page left to return to: its list has.
	if verb == "delete" && strings.HasPrefix(to, "/jobs/") && done > 0 {
		to = "/jobs"
	}
	backTo(w, r, to, msg)
}

// refusals lists the jobs an action skipped, each reason once:
// "2 running (ids 4, 9), 1 gone (id 7)".
func refusals(running, gone []int64) string {
	var parts []string
	for _, g := range []struct {
		why string
		ids []int64
	}{{"running", running}, {"gone", gone}} {
		if len(g.ids) == 0 {
			continue
		}
		list := make([]string, 0, len(g.ids))
		for i, id := range g.ids {
			if i == 10 {
				list = append(list, "…")
				break
			}
			list = append(list, strconv.FormatInt(id, 10))
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s %s)", plural.Number(int64(len(g.ids))), g.why,
			plural.Noun(int64(len(g.ids)), "id", "ids"), strings.Join(list, ", ")))
	}
	return strings.Join(parts, ", ")
}

// pastTense is what a message says a verb did.
var pastTense = map[string]string{"retry": "retried", "cancel": "cancelled", "delete": "deleted", "replay": "replayed"}

// confirmJobs previews cancel or delete of a selection: the jobs it can
// act on (not running; cancel: live), counted now.
func (d *dash) confirmJobs(w http.ResponseWriter, r *http.Request, verb string, ids []int64) {
	states, err := d.ops.Jobs().States(r.Context(), d.pool, ids)
	if err != nil {
		d.internal(w, r, "reading the selected jobs", err)
		return
	}
	c := confirmData{Action: "jobs/action", Button: "Yes, " + verb, Class: "danger",
		Fields: []field{{"action", verb}, {"return", returnPath(r)}}}
	var running, stopping, gone, dead int
	for _, id := range ids {
		switch s := states[id]; {
		case s == "":
			gone++
		case s == admin.StateRunning && verb == "cancel":
			// Cancel asks the job's worker to stop it (Jobs.Cancel).
			stopping++
			c.Count++
			c.Fields = append(c.Fields, field{"id", strconv.FormatInt(id, 10)})
		case s == admin.StateRunning:
			running++
		case s == admin.StateDead && verb == "cancel":
			dead++
		default:
			c.Count++
			c.Fields = append(c.Fields, field{"id", strconv.FormatInt(id, 10)})
		}
	}
	if verb == "delete" {
		c.What = fmt.Sprintf("Delete %s for good: they never run and leave no dead letter.", plural.Count(c.Count, "job", "jobs"))
	} else {
		c.What = fmt.Sprintf("Cancel %s: they move to the dead letters with reason cancelled.", plural.Count(c.Count, "job", "jobs"))
	}
	if stopping > 0 {
		c.Notes = append(c.Notes, plural.Count(int64(stopping), "of them is", "of them are")+" running: its worker is asked to stop it, and it moves to the dead letters once stopped.")
	}
	if running > 0 {
		c.Notes = append(c.Notes, plural.Count(int64(running), "selected job is", "selected jobs are")+" running and left to its worker.")
	}
	if dead > 0 {
		c.Notes = append(c.Notes, plural.Count(int64(dead), "selected job is", "selected jobs are")+" already dead.")
	}
	if gone > 0 {
		c.Notes = append(c.Notes, plural.Count(int64(gone), "selected job is", "selected jobs are")+" gone (finished or removed).")
	}
	d.confirm(w, r, fmt.Sprintf("%s %s?", title(verb), plural.Count(c.Count, "job", "jobs")), c)
}

// title capitalises a verb for a page title.
func title(verb string) string {
	if verb == "" {
		return ""
	}
	return strings.ToUpper(verb[:1]) + verb[1:]
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

// deadGroup reads the dead-letter group a form names (kind and error) as
// a filter, or answers 400.
func (d *dash) deadGroup(w http.ResponseWriter, r *http.Request) (admin.DeadGroup, admin.DeadFilter, bool) {
	g := admin.DeadGroup{Kind: r.PostFormValue("kind"), Error: r.PostFormValue("error")}
	f, ok := g.Filter()
	if g.Kind == "" || !ok {
		d.fail(w, r, http.StatusBadRequest, "a group is a kind and an error")
		return g, f, false
	}
	return g, f, true
}

// previewDead counts the dead jobs of f that died before now, for a
// confirmation whose fields then carry that time as "before".
func (d *dash) previewDead(w http.ResponseWriter, r *http.Request, f admin.DeadFilter, c *confirmData) bool {
	now := time.Now()
	f.Before = now
	n, err := d.ops.DeadLetters().Count(r.Context(), d.pool, f)
	if err != nil {
		d.internal(w, r, "counting dead letters", err)
		return false
	}
	c.Count = n
	c.Fields = append(c.Fields, field{"before", strconv.FormatInt(now.UnixNano(), 10)})
	return true
}

// confirmedDead reads a dead-letter confirmation's bound into f: the
// death time and the count.
func (d *dash) confirmedDead(w http.ResponseWriter, r *http.Request, f *admin.DeadFilter) bool {
	before, err := confirmedTime(r, "before")
	if err == nil {
		var n int64
		n, err = confirmedCount(r, math.MaxInt32)
		f.Before, f.Limit = before, int(n)
	}
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// replayGroup replays the dead letters of one kind and error at a rate of
// at most Config.MaxReplayRate, as docket dlq replay does, after a
// confirmation that counts them. The replay runs as a task (tasks.go): the
// POST returns at once, the pages show its progress, Stop ends it.
func (d *dash) replayGroup(w http.ResponseWriter, r *http.Request) {
	g, f, ok := d.deadGroup(w, r)
	if !ok {
		return
	}
	rate, err := strconv.ParseFloat(r.PostFormValue("rate"), 64)
	if err != nil || rate <= 0 || rate > d.cfg.MaxReplayRate {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("rate: want 0 to %g jobs per second", d.cfg.MaxReplayRate))
		return
	}
	if !confirmed(r) {
		c := confirmData{Action: "dead/replay", Button: "Yes, replay", Class: "",
			Fields: []field{{"kind", g.Kind}, {"error", g.Error}, {"rate", r.PostFormValue("rate")}, {"return", returnPath(r)}}}
		if !d.previewDead(w, r, f, &c) {
			return
		}
		if c.Count > admin.MaxMatching {
			c.Count, c.More = admin.MaxMatching, true
		}
		c.What = fmt.Sprintf("Replay the %s of kind %s that died with this error, at %g per second (about %s): they go back to their queue and run again.",
			plural.Count(c.Count, "dead job", "dead jobs"), g.Kind, rate, dur(time.Duration(float64(c.Count)/rate*float64(time.Second))))
		c.Notes = []string{"Error: " + g.Error,
			"The replay runs on the server as a task: it goes on if you close this page; the dead-letters and Tasks pages show its progress and can stop it. " +
				"If the dashboard's process exits it stops: what was replayed stays replayed, the rest stays dead."}
		d.confirm(w, r, "Replay this group?", c)
		return
	}
	if !d.confirmedDead(w, r, &f) {
		return
	}
	f.Limit = min(f.Limit, admin.MaxMatching)
	name := fmt.Sprintf("replay of kind %s, error %s", g.Kind, clipError(g.Error))
	_, err = d.tasks.start(d.logger(r), "replay\x00"+g.Kind+"\x00"+g.Error, name, int64(f.Limit), func(ctx context.Context, t *task) error {
		_, err := d.ops.DeadLetters().Replay(ctx, d.pool, f, admin.ReplayOptions{Rate: rate, Progress: func(res admin.ReplayResult) {
			t.done.Store(int64(len(res.Replayed)))
			t.skipped.Store(int64(len(res.Skipped)))
		}})
		return err
	})
	if errors.Is(err, errTaskRunning) {
		back(w, r, "a replay of this group is already running: see its progress below or on Tasks")
		return
	}
	back(w, r, fmt.Sprintf("replay of up to %s of kind %s started", plural.Count(int64(f.Limit), "dead job", "dead jobs"), g.Kind))
}

// clipError cuts an error for a title or a table cell: its first line, at
// most 120 characters.
func clipError(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

// discardGroup deletes the dead letters of one kind and error for good,
// after a confirmation that counts them.
func (d *dash) discardGroup(w http.ResponseWriter, r *http.Request) {
	g, f, ok := d.deadGroup(w, r)
	if !ok {
		return
	}
	if !confirmed(r) {
		c := confirmData{Action: "dead/discard", Button: "Yes, discard", Class: "danger",
			Fields: []field{{"kind", g.Kind}, {"error", g.Error}, {"return", returnPath(r)}}}
		if !d.previewDead(w, r, f, &c) {
			return
		}
		c.What = fmt.Sprintf("Discard the %s of kind %s that died with this error, for good: they are never replayed.",
			plural.Count(c.Count, "dead job", "dead jobs"), g.Kind)
		c.Notes = []string{"Error: " + g.Error, "Jobs of this group that die after this page was drawn are kept."}
		d.confirm(w, r, "Discard this group?", c)
		return
	}
	if !d.confirmedDead(w, r, &f) {
		return
	}
	n, err := d.ops.DeadLetters().Discard(r.Context(), d.pool, f)
	if err != nil {
		d.internal(w, r, "discard", err)
		return
	}
	d.logger(r).Info("dashboard: discard", slog.String("kind", g.Kind), slog.Int64("deleted", n))
	back(w, r, fmt.Sprintf("discarded %s of kind %s", plural.Count(n, "dead job", "dead jobs"), g.Kind))
}

// purge deletes the dead letters that died before a duration ago, of
// every group, after a confirmation that counts them.
func (d *dash) purge(w http.ResponseWriter, r *http.Request) {
	age, err := time.ParseDuration(r.PostFormValue("older_than"))
	if err != nil || age < 0 {
		d.fail(w, r, http.StatusBadRequest, "older than: want a duration such as 168h")
		return
	}
	if !confirmed(r) {
		now := time.Now()
		cutoff := now.Add(-age)
		n, err := d.ops.DeadLetters().Count(r.Context(), d.pool, admin.DeadFilter{Before: cutoff})
		if err != nil {
			d.internal(w, r, "counting dead letters", err)
			return
		}
		d.confirm(w, r, "Purge dead letters?", confirmData{Action: "dead/purge", Button: "Yes, purge", Class: "danger", Count: n,
			What: fmt.Sprintf("Delete for good the %s, of every kind and error, that died more than %s ago (before %s).",
				plural.Count(n, "dead job", "dead jobs"), age, when(cutoff)),
			Fields: []field{{"older_than", age.String()}, {"before", strconv.FormatInt(cutoff.UnixNano(), 10)}, {"return", returnPath(r)}}})
		return
	}
	f := admin.DeadFilter{}
	if !d.confirmedDead(w, r, &f) {
		return
	}
	n, err := d.ops.DeadLetters().Discard(r.Context(), d.pool, f)
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

// trimDocket is an error's text without the "docket: " of package admin.
func trimDocket(err error) string { return strings.TrimPrefix(err.Error(), "docket: ") }
