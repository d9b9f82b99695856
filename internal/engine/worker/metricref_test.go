package worker

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/outbox/relay"
	"github.com/prometheus/client_golang/prometheus"
)

// The metric reference in docs/operations.md lists every metric Docket's
// collectors describe, with its labels, and nothing else: the worker's
// (metricsFor), the status collector's and a relay's.
func TestMetricReference(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{} // name -> labels, sorted, comma-joined
	metric := regexp.MustCompile("`(docket_[a-z0-9_]+)(?:\\{([a-z_,]*)\\})?`")
	for line := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(line, "| `docket_") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range metric.FindAllStringSubmatch(first, -1) {
			listed[m[1]] = sortedLabels(strings.Split(m[2], ","))
		}
	}
	if len(listed) == 0 {
		t.Fatal("no metric found in docs/operations.md")
	}

	e := setup(t, 4)
	m, err := metricsFor(prometheus.NewRegistry(), "")
	if err != nil {
		t.Fatal(err)
	}
	all := []prometheus.Collector{m.claimDur, m.claimed, m.pickup, m.jobDur, m.outcomes, m.leaseLosses, m.notifyReconnects, m,
		admin.NewStatusCollector(e.pool, e.ops, admin.Thresholds{}), relay.Collector()}
	described := map[string]string{}
	descs := make(chan *prometheus.Desc, 100)
	go func() {
		for _, c := range all {
			c.Describe(descs)
		}
		close(descs)
	}()
	desc := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	for d := range descs {
		m := desc.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		described[m[1]] = sortedLabels(strings.Split(m[2], ","))
	}
	for name, labels := range described {
		got, ok := listed[name]
		switch {
		case !ok:
			t.Errorf("%s{%s} is exported but not in the reference", name, labels)
		case got != labels:
			t.Errorf("%s: the reference lists labels {%s}, the collector has {%s}", name, got, labels)
		}
	}
	for name := range listed {
		if _, ok := described[name]; !ok {
			t.Errorf("%s is in the reference but no collector exports it", name)
		}
	}
}

func sortedLabels(ls []string) string {
	ls = slices.DeleteFunc(ls, func(s string) bool { return strings.TrimSpace(s) == "" })
	for i := range ls {
		ls[i] = strings.TrimSpace(ls[i])
	}
	slices.Sort(ls)
	return strings.Join(ls, ",")
}
