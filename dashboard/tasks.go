package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/plural"
)

// A task is long work an action started and that outlives its request: a
// dead-letter group's replay at a few jobs per second, or the replay of
// every dead job a filter matches. It runs in a goroutine of the process
// serving the dashboard, so it goes on when the page that started it is
// closed, and every page load sees its progress (/tasks, the bar on the
// dead-letters page, the count in the menu). It ends when its work is
// done, when an operator stops it (POST /tasks/stop, between two batches),
// after taskLife, or when the process exits: what it replayed stays
// replayed and the rest stays dead, so starting it again is safe. One task
// per key (a group, a filter) runs at a time.

// taskLife bounds a task's run: a replay that is not done after it stops,
// and another can be started for what is left.
const taskLife = time.Hour

// keptTasks is how many ended tasks the list keeps for the pages.
const keptTasks = 20

// task is one run of long work.
type task struct {
	id      int64
	key     string
	title   string
	total   int64
	started time.Time
	stop    context.CancelFunc

	done, skipped atomic.Int64 // progress, set by the work

	mu      sync.Mutex
	ended   time.Time
	outcome string // empty while running
}

// taskList is the dashboard's tasks, in the order they started.
type taskList struct {
	mu   sync.Mutex
	next int64
	list []*task
}

// errTaskRunning is returned by start when a task of the key runs.
var errTaskRunning = errors.New("a task of the same work is running")

// start runs work in a goroutine as a new task of key, or returns
// errTaskRunning. work reports progress through the task's done and
// skipped, and stops when its context ends.
func (l *taskList) start(log *slog.Logger, key, title string, total int64, work func(ctx context.Context, t *task) error) (*task, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.list {
		if t.key == key && t.running() {
			return t, errTaskRunning
		}
	}
	l.next++
	ctx, cancel := context.WithTimeout(context.Background(), taskLife)
	t := &task{id: l.next, key: key, title: title, total: total, started: time.Now(), stop: cancel}
	l.list = append(l.list, t)
	// Keep the running tasks and the latest ended ones.
	if ended := len(l.list) - l.runningLocked(); ended > keptTasks {
		kept := l.list[:0]
		for _, x := range l.list {
			if x.running() || ended <= keptTasks {
				kept = append(kept, x)
			} else {
				ended--
			}
		}
		l.list = kept
	}
	log.Info("dashboard: task started", slog.Int64("task", t.id), slog.String("title", title), slog.Int64("total", total))
	go func() {
		defer cancel()
		err := work(ctx, t)
		outcome := "done"
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			outcome = "stopped"
		case errors.Is(err, context.DeadlineExceeded):
			outcome = "stopped after " + taskLife.String()
		default:
			outcome = "failed: the server log says why"
			log.Error("dashboard: task failed", slog.Int64("task", t.id), slog.String("error", err.Error()))
		}
		t.mu.Lock()
		t.ended, t.outcome = time.Now(), outcome
		t.mu.Unlock()
		log.Info("dashboard: task "+outcome, slog.Int64("task", t.id), slog.Int64("done", t.done.Load()), slog.Int64("skipped", t.skipped.Load()))
	}()
	return t, nil
}

func (t *task) running() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.outcome == ""
}

func (l *taskList) runningLocked() int {
	n := 0
	for _, t := range l.list {
		if t.running() {
			n++
		}
	}
	return n
}

// running counts the running tasks, for the menu.
func (l *taskList) running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runningLocked()
}

// get returns the task of id, or nil.
func (l *taskList) get(id int64) *task {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.list {
		if t.id == id {
			return t
		}
	}
	return nil
}

// taskView is a task as the pages show it.
type taskView struct {
	ID                   int64
	Title                string
	Done, Skipped, Total int64
	Percent              int
	Rate                 string // observed, per second
	Elapsed, Left        string
	Running              bool
	Outcome              string
}

// views returns the tasks, newest first: all of them when recent is
// negative, else the running ones and those that ended within recent.
func (l *taskList) views(recent time.Duration) []taskView {
	l.mu.Lock()
	list := append([]*task(nil), l.list...)
	l.mu.Unlock()
	var out []taskView
	for i := len(list) - 1; i >= 0; i-- {
		t := list[i]
		t.mu.Lock()
		ended, outcome := t.ended, t.outcome
		t.mu.Unlock()
		if recent >= 0 && outcome != "" && time.Since(ended) > recent {
			continue
		}
		v := taskView{ID: t.id, Title: t.title, Done: t.done.Load(), Skipped: t.skipped.Load(), Total: t.total,
			Running: outcome == "", Outcome: outcome}
		end := ended
		if v.Running {
			end = time.Now()
		}
		el := end.Sub(t.started)
		v.Elapsed = dur(el)
		if v.Total > 0 {
			v.Percent = int((v.Done + v.Skipped) * 100 / v.Total)
		}
		if s := el.Seconds(); s > 0 {
			rate := float64(v.Done+v.Skipped) / s
			v.Rate = fmt.Sprintf("%.1f/s", rate)
			if v.Running && rate > 0 {
				v.Left = dur(time.Duration(float64(v.Total-v.Done-v.Skipped) / rate * float64(time.Second)))
			}
		}
		out = append(out, v)
	}
	return out
}

// taskTable is the table of tasks a page shows, with what its Stop
// buttons need.
type taskTable struct {
	Tasks    []taskView
	Running  bool // some are: the page polls
	CSRF     string
	ReadOnly bool
	Return   string // the page the Stop buttons return to
}

// taskTable returns the tasks for a page (see views), the Stop buttons
// returning to ret.
func (d *dash) taskTable(r *http.Request, recent time.Duration, ret string) taskTable {
	t := taskTable{Tasks: d.tasks.views(recent), CSRF: csrfToken(r), ReadOnly: d.cfg.ReadOnly, Return: ret}
	for _, v := range t.Tasks {
		t.Running = t.Running || v.Running
	}
	return t
}

// tasksPage lists the tasks, running and recently ended.
func (d *dash) tasksPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, "tasks", view{Title: "Tasks", Nav: "tasks", Data: d.taskTable(r, -1, "/tasks")})
}

// stopTask stops a running task between two of its batches.
func (d *dash) stopTask(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PostFormValue("id"), 10, 64)
	t := d.tasks.get(id)
	if err != nil || t == nil {
		d.fail(w, r, http.StatusNotFound, "no such task: it never ran, or it ended long ago")
		return
	}
	if !t.running() {
		back(w, r, fmt.Sprintf("task %d had already ended", id))
		return
	}
	t.stop()
	d.logger(r).Info("dashboard: task stop", slog.Int64("task", id))
	// Wait a moment for the batch under way, so the page shows the end.
	for deadline := time.Now().Add(2 * time.Second); t.running() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	back(w, r, fmt.Sprintf("task %d stopped after %s", id, plural.Count(t.done.Load(), "job", "jobs")))
}
