package dashboard

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/plural"
)

// workflowStates are the states the workflows list filters by.
var workflowStates = []string{admin.WorkflowRunning, admin.WorkflowSucceeded, admin.WorkflowFailed, admin.WorkflowCancelled}

// stepStates are the columns of the workflows list: where a workflow's
// jobs are, in the order they move.
var stepStates = []string{admin.StateWaiting, admin.StateScheduled, admin.StateReady, admin.StateRunning, admin.StateDead}

// workflowsData is the workflows list.
type workflowsData struct {
	Filter     admin.WorkflowFilter
	States     []string
	StepStates []string
	Page       admin.WorkflowPage
	Scan       int
	NextURL    string
}

// workflowFilterFromQuery reads the list's filter, or says what is wrong.
func workflowFilterFromQuery(q url.Values) (admin.WorkflowFilter, error) {
	f := admin.WorkflowFilter{State: q.Get("state")}
	if s := q.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return f, errors.New("before: want a workflow id")
		}
		f.Before = n
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return f, errors.New("limit: want a page size of 1 to 200")
		}
		f.Limit = n
	}
	return f, f.Check()
}

func (d *dash) workflows(w http.ResponseWriter, r *http.Request) {
	f, err := workflowFilterFromQuery(r.URL.Query())
	if err != nil {
		d.fail(w, r, http.StatusBadRequest, "bad filter: "+err.Error())
		return
	}
	page, err := d.ops.Workflows().Page(r.Context(), d.pool, f)
	if err != nil {
		d.internal(w, r, "listing workflows", err)
		return
	}
	data := workflowsData{Filter: f, States: workflowStates, StepStates: stepStates, Page: page, Scan: admin.WorkflowScan}
	if page.Next != 0 {
		q := r.URL.Query()
		q.Set("before", strconv.FormatInt(page.Next, 10))
		q.Del("msg")
		data.NextURL = "workflows?" + q.Encode()
	}
	d.render(w, r, "workflows", view{Title: "Workflows", Nav: "workflows", Data: data})
}

// workflowData is a workflow's page.
type workflowData struct {
	W admin.WorkflowSummary
	// Counts are W's jobs by state, the states it has, in the order
	// they move.
	Counts []stateCount
	Graph  admin.WorkflowGraph
	Layout graphView
	// Waits are the steps that wait for a signal or have a delay.
	Waits        []admin.WorkflowStep
	ShowPayloads bool
	Self         string
}

// workflowID reads the {id} of a workflow's path, or answers 400.
func (d *dash) workflowID(w http.ResponseWriter, r *http.Request, s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		d.fail(w, r, http.StatusBadRequest, "a workflow id is a positive number")
		return 0, false
	}
	return id, true
}

func (d *dash) workflow(w http.ResponseWriter, r *http.Request) {
	id, ok := d.workflowID(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	sum, ok := d.workflowSummary(w, r, id)
	if !ok {
		return
	}
	g, err := d.ops.Workflows().Graph(r.Context(), d.pool, sum.WorkflowState, d.cfg.ShowPayloads)
	if err != nil {
		d.internal(w, r, "reading the workflow's steps", err)
		return
	}
	data := workflowData{W: sum, Counts: stepCounts(sum), Graph: g, Layout: layoutGraph(g), ShowPayloads: d.cfg.ShowPayloads, Self: r.URL.Path}
	for _, s := range g.Steps {
		if s.WaitFor != "" || s.Delay > 0 {
			data.Waits = append(data.Waits, s)
		}
	}
	d.render(w, r, "workflow", view{Title: "Workflow " + strconv.FormatInt(id, 10), Nav: "workflows", Data: data})
}

// cancelWorkflow cancels a running workflow as docket workflows cancel
// does, after a confirmation that counts the jobs it moves to the
// dead-letter table (those not running).
func (d *dash) cancelWorkflow(w http.ResponseWriter, r *http.Request) {
	id, ok := d.workflowID(w, r, r.PostFormValue("id"))
	if !ok {
		return
	}
	if !confirmed(r) {
		sum, ok := d.workflowSummary(w, r, id)
		if !ok {
			return
		}
		c := confirmData{Action: "workflows/cancel", Button: "Yes, cancel the workflow", Class: "danger",
			Fields: []field{{"id", strconv.FormatInt(id, 10)}, {"return", returnPath(r)}}}
		running := int64(sum.Steps[admin.StateRunning])
		if sum.State == admin.WorkflowRunning {
			c.Count = int64(sum.Remaining) - running
			c.More = sum.Capped
		}
		c.What = fmt.Sprintf("Cancel workflow %d (%s): its %s that are not running move to the dead letters with reason cancelled, and no job of it starts after this.",
			id, sum.Name, plural.Count(c.Count, "job", "jobs"))
		if running > 0 {
			c.Notes = append(c.Notes, plural.Count(running, "job is", "jobs are")+" running: each finishes its run, and nothing runs after it.")
		}
		if sum.State != admin.WorkflowRunning {
			c.Notes = append(c.Notes, "The workflow is "+sum.State+": there is nothing left to cancel.")
		}
		c.Notes = append(c.Notes, "Child workflows that its steps started are cancelled with them.")
		if c.Count == 0 && running > 0 {
			// Only running jobs: the mark alone still stops what follows.
			c.Count = 1
			c.What = fmt.Sprintf("Cancel workflow %d (%s): its running jobs finish their run, and nothing runs after them.", id, sum.Name)
		}
		d.confirm(w, r, fmt.Sprintf("Cancel workflow %d?", id), c)
		return
	}
	if _, err := confirmedCount(r, math.MaxInt32); err != nil {
		d.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	n, err := d.ops.Workflows().Cancel(r.Context(), d.pool, id)
	switch {
	case errors.Is(err, admin.ErrWorkflowNotFound):
		d.fail(w, r, http.StatusNotFound, "no workflow "+strconv.FormatInt(id, 10))
		return
	case errors.Is(err, admin.ErrWorkflowFinished):
		back(w, r, "refused: "+trimDocket(err))
		return
	case err != nil:
		d.internal(w, r, "cancelling the workflow", err)
		return
	}
	d.logger(r).Info("dashboard: workflow cancel", slog.Int64("workflow", id), slog.Int64("cancelled", n))
	back(w, r, fmt.Sprintf("workflow %d cancelled: %s moved to the dead letters", id, plural.Count(n, "job", "jobs")))
}

// stateCount is a number of jobs in a state.
type stateCount struct {
	State string
	N     string // "12", "10000+" for a capped count, "?" when unknown
}

// stepCounts lists w's jobs by state: the states it has, completed last.
func stepCounts(w admin.WorkflowSummary) []stateCount {
	var out []stateCount
	plus := ""
	if w.Capped {
		plus = "+"
	}
	for _, s := range stepStates {
		if n := w.Steps[s]; n > 0 {
			out = append(out, stateCount{s, strconv.Itoa(n) + plus})
		}
	}
	switch {
	case w.Completed > 0:
		out = append(out, stateCount{admin.StateCompleted, strconv.Itoa(w.Completed)})
	case w.Completed < 0:
		out = append(out, stateCount{admin.StateCompleted, "?"})
	}
	return out
}

// workflowSummary reads workflow id's summary, or answers 404 (no such
// workflow) or 500 and returns false.
func (d *dash) workflowSummary(w http.ResponseWriter, r *http.Request, id int64) (admin.WorkflowSummary, bool) {
	sum, err := d.ops.Workflows().Summary(r.Context(), d.pool, id)
	if errors.Is(err, admin.ErrWorkflowNotFound) {
		d.fail(w, r, http.StatusNotFound, "no workflow "+strconv.FormatInt(id, 10))
		return sum, false
	}
	if err != nil {
		d.internal(w, r, "reading the workflow", err)
		return sum, false
	}
	return sum, true
}
