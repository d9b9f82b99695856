package relay

import "github.com/prometheus/client_golang/prometheus"

// collector exports the summed Stats of a process's relays.
type collector struct {
	relays                                           []*Relay
	published, refused, dead, failures, partitionsDs *prometheus.Desc
}

// Collector returns a Prometheus collector of the counters of relays,
// summed, so that a process running several relays exports one series
// each: docket_relay_published_total, docket_relay_refusals_total,
// docket_relay_dead_lettered_total, docket_relay_publish_failures_total
// (transient: rounds that failed and backed off) and the gauge
// docket_relay_partitions. Relay lag and backlog are database-wide; read
// them with outbox.Client.EventStatus.
func Collector(relays ...*Relay) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &collector{
		relays:       relays,
		published:    d("docket_relay_published_total", "Events the broker acknowledged, by this process's relays."),
		refused:      d("docket_relay_refusals_total", "Permanent broker refusals of events."),
		dead:         d("docket_relay_dead_lettered_total", "Events dead-lettered after their last permanent refusal."),
		failures:     d("docket_relay_publish_failures_total", "Publish rounds that failed transiently (broker or database down) and backed off."),
		partitionsDs: d("docket_relay_partitions", "Event partitions this process's relays hold now (of 64)."),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.published
	ch <- c.refused
	ch <- c.dead
	ch <- c.failures
	ch <- c.partitionsDs
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	var s Stats
	for _, r := range c.relays {
		st := r.Stats()
		s.Published += st.Published
		s.Refused += st.Refused
		s.DeadLettered += st.DeadLettered
		s.Failed += st.Failed
		s.Parts += st.Parts
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(c.published, s.Published)
	counter(c.refused, s.Refused)
	counter(c.dead, s.DeadLettered)
	counter(c.failures, s.Failed)
	ch <- prometheus.MustNewConstMetric(c.partitionsDs, prometheus.GaugeValue, float64(s.Parts))
}
