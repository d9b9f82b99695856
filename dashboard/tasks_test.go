package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/dashboard"
)

var taskDone = regexp.MustCompile(`<td class="n task-done">(\d+)</td>`)

// A group's replay is a task: the POST returns at once, another client
// sees its progress, a second replay of the group is refused while it
// runs, and Stop ends it with what it replayed replayed and the rest dead.
func TestReplayTask(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{MaxReplayRate: 1000})
	b.DeadN(t, "slow", 40, "timeout")
	c := client(t)
	token := csrf(t, c, b.Srv.URL+"/dead")
	form := url.Values{"csrf": {token}, "kind": {"mail"}, "error": {"timeout"}, "rate": {"4"}, "return": {"/dead"}}
	_, body, _ := post(t, c, b.Srv.URL+"/dead/replay", form)
	if m := confirmCount.FindStringSubmatch(body); m == nil || m[1] != "40" {
		t.Fatalf("replay preview: %v\n%s", m, body)
	}
	confirm := confirmForm(t, body)
	start := time.Now()
	code, _, h := post(t, c, b.Srv.URL+"/dead/replay", confirm)
	if took := time.Since(start); code != http.StatusSeeOther || took > 2*time.Second || !strings.Contains(h.Get("Location"), "started") {
		t.Fatalf("confirmed replay: %d %q in %v, want a redirect at once", code, h.Get("Location"), took)
	}
	// Another browser sees it running, on every page's menu and on Tasks.
	other := client(t)
	deadline := time.Now().Add(10 * time.Second)
	var done int
	for {
		_, page, _ := get(t, other, b.Srv.URL+"/tasks")
		if m := taskDone.FindStringSubmatch(page); m != nil && m[1] != "0" {
			done, _ = strconv.Atoi(m[1])
			if !strings.Contains(page, "replay of kind mail, error timeout") || !strings.Contains(page, `class="n task-total">40<`) {
				t.Errorf("tasks page:\n%s", page)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress on the tasks page:\n%s", page)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, page, _ := get(t, other, b.Srv.URL+"/"); !strings.Contains(page, "1 running") {
		t.Errorf("the menu does not count the running task")
	}
	if _, page, _ := get(t, other, b.Srv.URL+"/dead"); !strings.Contains(page, `data-task="1"`) || !strings.Contains(page, `data-live="dead?live=1"`) {
		t.Errorf("the dead-letters page does not show the replay")
	}
	// One replay per group at a time.
	code, _, h = post(t, c, b.Srv.URL+"/dead/replay", confirm)
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "already+running") {
		t.Errorf("second replay of the group: %d %q", code, h.Get("Location"))
	}
	// Stop, from the other browser.
	code, _, h = post(t, other, b.Srv.URL+"/tasks/stop", url.Values{"csrf": {csrf(t, other, b.Srv.URL+"/tasks")}, "id": {"1"}, "return": {"/tasks"}})
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "stopped") {
		t.Fatalf("stop: %d %q", code, h.Get("Location"))
	}
	_, page, _ := get(t, other, b.Srv.URL+"/tasks")
	m := taskDone.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `<td class="task-state">stopped</td>`) {
		t.Fatalf("after stop:\n%s", page)
	}
	time.Sleep(time.Second) // four jobs' worth at 4/s: nothing more may happen
	var left int
	b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM "`+b.Schema+`".docket_jobs_dead WHERE queue = 'slow'`).Scan(&left)
	if n, _ := strconv.Atoi(m[1]); n != 40-left || left == 0 || n < done {
		t.Errorf("stopped after %s replayed, %d left dead of 40", m[1], left)
	}
}

// "Replay all…" on the dead jobs of a filter runs as a paced task too.
func TestReplayAllMatchingIsATask(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Config{MaxReplayRate: 50})
	b.DeadN(t, "again", 5, "flaky")
	c := client(t)
	token := csrf(t, c, b.Srv.URL+"/jobs?state=dead&queue=again")
	_, body, _ := post(t, c, b.Srv.URL+"/jobs/matching", url.Values{"csrf": {token}, "action": {"retry"}, "state": {"dead"}, "queue": {"again"}, "return": {"/jobs?state=dead&queue=again"}})
	if m := confirmCount.FindStringSubmatch(body); m == nil || m[1] != "5" {
		t.Fatalf("preview: %v\n%s", m, body)
	}
	code, _, h := post(t, c, b.Srv.URL+"/jobs/matching", confirmForm(t, body))
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "started") {
		t.Fatalf("confirmed: %d %q", code, h.Get("Location"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, page, _ := get(t, c, b.Srv.URL+"/tasks")
		if strings.Contains(page, `<td class="task-state">done</td>`) && strings.Contains(page, `class="n task-done">5<`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not finish:\n%s", page)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var left int
	b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM "`+b.Schema+`".docket_jobs_dead WHERE queue = 'again'`).Scan(&left)
	if left != 0 {
		t.Errorf("%d dead jobs left in queue again, want 0", left)
	}
}
