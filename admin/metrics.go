package admin

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StatusCollector exports the status views (Client.Status) as
// gauges, read from the database at every scrape: per queue the jobs by
// state, lag, paused flag, the dead-letter queue and its 24-hour delta;
// per table dead and live tuples and the last vacuum and analyze; stuck
// jobs; unserved kinds; the age of the oldest holder of the vacuum
// horizon; live workers; warnings by code; the outbox relay's backlog,
// lag, dead events and live relays. A failed read sets docket_status_up
// to 0. Completions, retries and deaths are the workers' counters
// (docket_jobs_finished_total), which can be rated and summed.
type StatusCollector struct {
	db         DB
	c          *Client
	thresholds Thresholds
	timeout    time.Duration
	descs      map[string]*prometheus.Desc
}

// NewStatusCollector returns a collector that reads c's Status through db
// with thresholds th (zero values mean the defaults) at every scrape,
// bounded by a 10-second timeout.
func NewStatusCollector(db DB, c *Client, th Thresholds) *StatusCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &StatusCollector{db: db, c: c, thresholds: th, timeout: 10 * time.Second, descs: map[string]*prometheus.Desc{
		"up":          d("docket_status_up", "1 when the last status read succeeded."),
		"jobs":        d("docket_queue_jobs", "Live jobs by queue and state (ready, scheduled, running).", "queue", "state"),
		"lag":         d("docket_queue_lag_seconds", "Age of the queue's oldest due job that is not running.", "queue"),
		"paused":      d("docket_queue_paused", "1 when the queue is paused.", "queue"),
		"dlq":         d("docket_dlq_jobs", "Jobs in the dead-letter table, by queue.", "queue"),
		"dlqDelta":    d("docket_dlq_delta_24h_jobs", "Growth of the dead-letter queue over the last 24 hours, by queue.", "queue"),
		"dead":        d("docket_table_dead_tuples", "Dead tuples of Docket's tables (pg_stat_user_tables).", "table"),
		"live":        d("docket_table_live_tuples", "Live tuples of Docket's tables (pg_stat_user_tables).", "table"),
		"vacuumed":    d("docket_table_last_vacuum_timestamp_seconds", "Last (auto)vacuum of the table, Unix time; 0 if never.", "table"),
		"analyzed":    d("docket_table_last_analyze_timestamp_seconds", "Last (auto)analyze of the table, Unix time; 0 if never.", "table"),
		"stuck":       d("docket_stuck_jobs", "Running jobs whose lease expired and that nobody reaped."),
		"unserved":    d("docket_unserved_jobs", "Ready jobs of a queue and kind that no live worker serves.", "queue", "kind"),
		"horizon":     d("docket_vacuum_horizon_age_seconds", "How long the oldest transaction of this database has held back the vacuum horizon; 0 if none."),
		"horizonXIDs": d("docket_vacuum_horizon_age_xids", "Age in transactions of the oldest xmin holding back this database's vacuum horizon (transactions, replication slots, prepared transactions)."),
		"workers":     d("docket_workers_live", "Worker processes that heartbeated recently."),
		"warnings":    d("docket_status_warnings", "Status warnings by code.", "code"),
		// The outbox relay's backlog, where migration 011 is applied.
		"eventsPending": d("docket_events_pending", "Outbox events committed and not yet acknowledged by the broker (dead letters excluded)."),
		"eventsLag":     d("docket_events_lag_seconds", "Age of the oldest pending outbox event: the relay's lag; 0 if none."),
		"eventsDead":    d("docket_events_dead", "Outbox events the broker refused for good, waiting for replay or purge."),
		"eventsBlocked": d("docket_event_keys_blocked", "Event keys held back by a dead event."),
		"relays":        d("docket_relays_live", "Outbox relays holding a live lease."),
	}}
}

// Describe implements prometheus.Collector.
func (c *StatusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one status read per scrape.
func (c *StatusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	s, err := c.c.Status(ctx, c.db, c.thresholds)
	if err != nil {
		gauge("up", 0)
		return
	}
	gauge("up", 1)
	for _, q := range s.Queues {
		gauge("jobs", float64(q.Ready), q.Queue, "ready")
		gauge("jobs", float64(q.Scheduled), q.Queue, "scheduled")
		gauge("jobs", float64(q.Running), q.Queue, "running")
		gauge("lag", q.Lag.Seconds(), q.Queue)
		gauge("paused", b2f(q.Paused), q.Queue)
		gauge("dlq", float64(q.DLQSize), q.Queue)
		gauge("dlqDelta", float64(q.DLQDelta24h), q.Queue)
	}
	for _, t := range tableStats(s.Tables) {
		gauge("dead", float64(t.dead), t.name)
		gauge("live", float64(t.live), t.name)
		gauge("vacuumed", unix(t.vacuumed), t.name)
		gauge("analyzed", unix(t.analyzed), t.name)
	}
	gauge("stuck", float64(s.StuckCount))
	for _, u := range s.Unserved {
		gauge("unserved", float64(u.Jobs), u.Queue, u.Kind)
	}
	var age time.Duration
	var xids int64
	for _, h := range s.Horizon {
		if !h.SameDatabase {
			continue
		}
		if h.AgeKnown && h.Age > age {
			age = h.Age
		}
		xids = max(xids, h.XIDAge)
	}
	gauge("horizon", age.Seconds())
	gauge("horizonXIDs", float64(xids))
	live := 0
	for _, w := range s.Workers {
		if !w.Live {
			continue
		}
		live++
	}
	gauge("workers", float64(live))
	byCode := map[string]int{}
	for _, w := range s.Warnings {
		byCode[w.Code]++
	}
	for _, code := range WarningCodes() {
		gauge("warnings", float64(byCode[code]), code)
	}
	if ev := s.Events; ev != nil {
		gauge("eventsPending", float64(ev.Pending))
		gauge("eventsLag", ev.Lag.Seconds())
		gauge("eventsDead", float64(ev.Dead))
		gauge("eventsBlocked", float64(ev.BlockedKeys))
		gauge("relays", float64(ev.Relays))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func laterTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// historyTable is the partitioned history table; its per-day partitions
// (docket_jobs_done_YYYYMMDD) are reported under its name, so that the
// table label does not churn with a new series every day.
const historyTable = "docket_jobs_done"

// tableStat is one table label's numbers.
type tableStat struct {
	name               string
	dead, live         int64
	vacuumed, analyzed time.Time
}

// tableStats folds the history partitions into one historyTable row:
// tuples summed, the latest vacuum and analyze of any of them.
func tableStats(tables []TableStatus) []tableStat {
	var out []tableStat
	at := map[string]int{}
	for _, t := range tables {
		name := t.Table
		if strings.HasPrefix(name, historyTable) {
			name = historyTable
		}
		i, ok := at[name]
		if !ok {
			i = len(out)
			at[name] = i
			out = append(out, tableStat{name: name})
		}
		o := &out[i]
		o.dead += t.DeadTuples
		o.live += t.LiveTuples
		o.vacuumed = laterTime(o.vacuumed, t.LastVacuumed())
		o.analyzed = laterTime(o.analyzed, laterTime(t.LastAnalyze, t.LastAutoanalyze))
	}
	return out
}
