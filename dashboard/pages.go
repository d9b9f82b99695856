package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/google/uuid"
)

// overviewData is the overview: queues, warnings, totals. Its counts come
// from admin.Overview and stop at its Limit; ReadyMore says whether a
// queue's ready count did, so that the total is a lower bound too.
type overviewData struct {
	*admin.Overview
	Ready, Run, Dead1h, LiveWorkers int64
	ReadyMore                       bool
}

func (d *dash) overview(w http.ResponseWriter, r *http.Request) {
	o, err := d.ops.Overview(r.Context(), d.pool, d.cfg.Thresholds)
	if err != nil {
		d.internal(w, r, "reading the overview", err)
		return
	}
	data := overviewData{Overview: o}
	for _, q := range o.Queues {
		data.Ready += q.Ready
		data.ReadyMore = data.ReadyMore || o.Capped(q.Ready)
		data.Run += q.Running
		data.Dead1h += q.Dead1h
	}
	for _, wk := range o.Workers {
		if wk.Live {
			data.LiveWorkers++
		}
	}
	d.render(w, r, "overview", view{Title: "Overview", Nav: "overview", Data: data})
}

// jobsData is the jobs page: the filter as given, the counts of its jobs
// by state, and one page.
type jobsData struct {
	Filter admin.JobFilter
	States []string
	Page   admin.JobPage
	// Counts are the filter's jobs by state (admin.Jobs.CountStates), each
	// with the link to its list; Live is the card of every live job, their
	// sum (what the list shows without a state).
	Counts []countCard
	Live   countCard
	// NextURL is the link to the next page; Self the page itself (for the
	// actions to return to).
	NextURL, Self string
}

// jobsScan bounds how many jobs of its state a filtered page of the jobs
// list looks at (admin.JobFilter.Scan).
const jobsScan = 20_000

// filterFromQuery reads a job filter from a query, or says what is wrong.
func filterFromQuery(q url.Values) (admin.JobFilter, error) {
	f := admin.JobFilter{State: q.Get("state"), Queue: q.Get("queue"), Kind: q.Get("kind"), Tenant: q.Get("tenant"),
		SerialKey: q.Get("serial_key"), ErrorContains: q.Get("error")}
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return f, errors.New("after: want a job id")
		}
		f.After = n
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return f, errors.New("limit: want a page size of 1 to 1000")
		}
		f.Limit = n
	}
	return f, f.Check()
}

func (d *dash) jobs(w http.ResponseWriter, r *http.Request) {
	f, err := filterFromQuery(r.URL.Query())
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, "bad filter: "+err.Error())
		return
	}
	// A filtered page stops after jobsScan jobs of its state, so a filter
	// that matches few or none never reads the whole table.
	f.Scan = jobsScan
	page, err := d.ops.Jobs().List(r.Context(), d.pool, f)
	if err != nil {
		d.internal(w, r, "listing jobs", err)
		return
	}
	counts, err := d.ops.Jobs().CountStates(r.Context(), d.pool, f)
	if err != nil {
		d.internal(w, r, "counting jobs", err)
		return
	}
	data := jobsData{Filter: f, Page: page, Self: r.URL.Path + "?" + r.URL.RawQuery,
		States: admin.JobStates()}
	data.Counts, data.Live = countCards(r.URL.Query(), f.State, counts)
	if page.Next != 0 {
		q := r.URL.Query()
		q.Set("after", strconv.FormatInt(page.Next, 10))
		q.Del("msg")
		data.NextURL = "jobs?" + q.Encode()
	}
	d.render(w, r, "jobs", view{Title: "Jobs", Nav: "jobs", Data: data})
}

// countCard is one count of the jobs page: a state's jobs (or every live
// job's, State empty), with "+" when the count stopped (More), linking to
// the list of those jobs.
type countCard struct {
	State   string
	N       int64
	More    bool
	URL     string
	Current bool // the list shows these jobs now
}

// countCards makes the jobs page's cards from the counts of the filter in
// query q (whose state is current): one per state, and the live jobs'
// total. Each links to the list of the filter with its state, from the
// first page.
func countCards(q url.Values, current string, counts []admin.StateCount) ([]countCard, countCard) {
	link := func(state string) string {
		l := url.Values{}
		for _, k := range filterFields {
			if v := q.Get(k); v != "" && k != "state" {
				l.Set(k, v)
			}
		}
		if state != "" {
			l.Set("state", state)
		}
		if len(l) == 0 {
			return "jobs"
		}
		return "jobs?" + l.Encode()
	}
	live := countCard{URL: link(""), Current: current == ""}
	cards := make([]countCard, 0, len(counts))
	for _, c := range counts {
		cards = append(cards, countCard{State: c.State, N: c.N, More: c.More, URL: link(c.State), Current: c.State == current})
		if c.State != admin.StateDead && c.State != admin.StateCompleted {
			live.N += c.N
			live.More = live.More || c.More
		}
	}
	return cards, live
}

// jobData is the job page.
type jobData struct {
	Job admin.JobInfo
	// Attempts are the job's runs, oldest first.
	Attempts    []admin.Attempt
	ShowPayload bool
	Payload     string // indented JSON when shown
	// Result is the job's result, indented, when payloads are shown and
	// the job has one: a result may hold personal data too.
	Result string
	// Workflow is the workflow the job is a step of and the child
	// workflow it started, each 0 if none.
	Workflow admin.JobWorkflow
	Self     string
}

func (d *dash) job(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		d.fail(w, r, http.StatusBadRequest, "a job id is a positive number")
		return
	}
	j, err := d.ops.Jobs().Get(r.Context(), d.pool, id, d.cfg.ShowPayloads)
	if errors.Is(err, admin.ErrJobNotFound) {
		d.fail(w, r, http.StatusNotFound, "no job "+strconv.FormatInt(id, 10)+": it never existed, or it finished and history no longer has it")
		return
	}
	if err != nil {
		d.internal(w, r, "reading the job", err)
		return
	}
	attempts, err := d.ops.Jobs().Attempts(r.Context(), d.pool, id)
	if err != nil && !errors.Is(err, admin.ErrJobNotFound) { // gone since: nothing to list
		d.internal(w, r, "reading the job's attempts", err)
		return
	}
	wf, err := d.ops.Workflows().OfJob(r.Context(), d.pool, id)
	if err != nil {
		d.internal(w, r, "reading the job's workflow", err)
		return
	}
	data := jobData{Job: j, Attempts: attempts, Workflow: wf, ShowPayload: d.cfg.ShowPayloads, Self: r.URL.Path}
	if d.cfg.ShowPayloads {
		// Indented as stored: no re-encoding, so no \u003c for "<" (the
		// template escapes it once, for HTML).
		data.Payload = indentJSON(j.Payload)
		if j.Result != nil {
			data.Result = indentJSON(j.Result)
		}
	}
	d.render(w, r, "job", view{Title: "Job " + strconv.FormatInt(id, 10), Nav: "jobs", Data: data})
}

// deadData is the dead letters page.
type deadData struct {
	Groups  []admin.DeadGroup
	MaxRate float64
	Scope   int64 // how many of the latest dead jobs are grouped
	Tasks   taskTable
}

func (d *dash) dead(w http.ResponseWriter, r *http.Request) {
	var groups []admin.DeadGroup
	// The live part is the replays' bar alone: no grouping for a poll.
	if r.URL.Query().Get("live") != "1" {
		var err error
		if groups, err = d.ops.DeadLetters().Groups(r.Context(), d.pool, 100); err != nil {
			d.internal(w, r, "grouping dead letters", err)
			return
		}
	}
	d.render(w, r, "dead", view{Title: "Dead letters", Nav: "dead", Data: deadData{Groups: groups, MaxRate: d.cfg.MaxReplayRate, Scope: admin.DeadGroupsScope,
		Tasks: d.taskTable(r, time.Minute, "/dead")}})
}

// scheduleRow is a schedule on the schedules page, with what happened to
// the run of its last fire.
//
// The page reads the schedule's fields through .ScheduleInfo, not promoted
// from the row: a promoted field costs html/template a reflect search by
// name on every use, which cost a page of 1,000 schedules a fifth of its time.
type scheduleRow struct {
	admin.ScheduleInfo
	Last admin.ScheduleOutcome
}

func (d *dash) schedules(w http.ResponseWriter, r *http.Request) {
	list, err := d.ops.Schedules().List(r.Context(), d.pool)
	if err != nil {
		d.internal(w, r, "listing schedules", err)
		return
	}
	outcomes, err := d.ops.Schedules().Outcomes(r.Context(), d.pool)
	if err != nil {
		d.internal(w, r, "reading the schedules' last runs", err)
		return
	}
	rows := make([]scheduleRow, len(list))
	for i, s := range list {
		rows[i] = scheduleRow{ScheduleInfo: s, Last: outcomes[s.Name]}
	}
	d.render(w, r, "schedules", view{Title: "Schedules", Nav: "schedules", Data: rows})
}

// workersData is the workers page: the presence table and the live
// workers' running jobs as read at At.
type workersData struct {
	Workers []workerRow
	At      time.Time
}

// workerRow is a worker process with the jobs it runs now (live ones only).
type workerRow struct {
	admin.WorkerStatus
	Running []admin.RunningJob
}

func (d *dash) workers(w http.ResponseWriter, r *http.Request) {
	list, err := d.ops.Workers(r.Context(), d.pool)
	if err != nil {
		d.internal(w, r, "reading the workers", err)
		return
	}
	var live []uuid.UUID
	for _, wk := range list {
		if wk.Live {
			live = append(live, wk.ID)
		}
	}
	running, err := d.ops.RunningJobs(r.Context(), d.pool, live)
	if err != nil {
		d.internal(w, r, "reading the running jobs", err)
		return
	}
	by := map[uuid.UUID][]admin.RunningJob{}
	for _, j := range running {
		by[j.Worker] = append(by[j.Worker], j)
	}
	rows := make([]workerRow, len(list))
	for i, wk := range list {
		rows[i] = workerRow{WorkerStatus: wk, Running: by[wk.ID]}
	}
	d.render(w, r, "workers", view{Title: "Workers", Nav: "workers", Data: workersData{Workers: rows, At: time.Now()}})
}

// indentJSON indents a payload for the job page as stored: no \u003c
// for <, > and & (html/template escapes the page's text for HTML once),
// and numbers as written, never rounded through float64. Text that is not
// JSON is shown as it is.
func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
