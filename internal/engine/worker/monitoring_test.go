package worker

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// monitoringDir holds the Grafana dashboard and Prometheus alert rules
// shipped for Docket.
const monitoringDir = "../../../docs/monitoring/"

var metricRef = regexp.MustCompile(`\bdocket_[a-z0-9_]+`)

// checkMonitoringMetrics checks that every metric the dashboard and the
// alert rules query is in scraped, a /metrics text from a worker that ran
// jobs and a status collector that read a migrated schema. promtool is not
// available here, so the rules file's structure is checked line by line: it
// has groups, and every alert has an expression.
func checkMonitoringMetrics(t *testing.T, scraped string) {
	t.Helper()
	exported := map[string]bool{}
	for line := range strings.Lines(scraped) {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(name)
			exported[f[0]] = true
			if f[1] == "histogram" {
				for _, s := range []string{"_bucket", "_count", "_sum"} {
					exported[f[0]+s] = true
				}
			}
		}
	}

	raw, err := os.ReadFile(monitoringDir + "grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("grafana-dashboard.json has no panels")
	}
	var exprs []string
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}

	rules, err := os.ReadFile(monitoringDir + "prometheus-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stripComments(string(rules)), "groups:\n") {
		t.Error("prometheus-rules.yml does not start with groups:")
	}
	alerts, lastAlert, hasExpr := 0, "", true
	for line := range strings.Lines(string(rules)) {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "- alert: "); ok {
			if !hasExpr {
				t.Errorf("alert %s has no expr", lastAlert)
			}
			alerts, lastAlert, hasExpr = alerts+1, name, false
		}
		if expr, ok := strings.CutPrefix(line, "expr: "); ok {
			hasExpr = true
			exprs = append(exprs, expr)
		}
	}
	if !hasExpr {
		t.Errorf("alert %s has no expr", lastAlert)
	}
	for _, want := range []string{"DocketQueueLagHigh", "DocketDLQGrowing", "DocketVacuumHorizonHeld", "DocketNoLiveWorkers"} {
		if !strings.Contains(string(rules), "- alert: "+want+"\n") {
			t.Errorf("prometheus-rules.yml has no %s alert", want)
		}
	}

	for _, e := range exprs {
		for _, name := range metricRef.FindAllString(e, -1) {
			if !exported[name] {
				t.Errorf("%q uses %s, which Docket does not export", e, name)
			}
		}
	}
}

// stripComments drops the leading comment lines of a YAML file.
func stripComments(s string) string {
	for strings.HasPrefix(s, "#") {
		_, s, _ = strings.Cut(s, "\n")
	}
	return s
}
