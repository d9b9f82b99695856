package scheduler_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/scheduler"
)

func mustSpec(t *testing.T, spec, zone string) *scheduler.Spec {
	t.Helper()
	s, err := scheduler.ParseSpec(spec, zone)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseSpecAccepts(t *testing.T) {
	t.Parallel()
	from := time.Date(2025, 1, 1, 0, 0, 30, 0, time.UTC)
	for spec, want := range map[string]string{
		"*/5 * * * *":                     "2025-01-01T00:05:00Z",
		"15 */5 * * * *":                  "2025-01-01T00:05:15Z", // leading seconds
		"@hourly":                         "2025-01-01T01:00:00Z",
		"@daily":                          "2025-01-02T00:00:00Z",
		"@every 90s":                      "2025-01-01T00:02:00Z",
		"CRON_TZ=Europe/Berlin 0 9 * * *": "2025-01-01T08:00:00Z",
		"TZ=America/Los_Angeles @daily":   "2025-01-01T08:00:00Z",
		"0 0 29 2 *":                      "2028-02-29T00:00:00Z", // leap day fires
	} {
		got := mustSpec(t, spec, "").Next(from)
		if got.Format(time.RFC3339) != want {
			t.Errorf("%q: next after %s = %s, want %s", spec, from.Format(time.RFC3339), got.Format(time.RFC3339), want)
		}
	}
	// UTC unless a zone is given, whatever time.Local is.
	if got := mustSpec(t, "0 9 * * *", "").Next(from); got.Hour() != 9 || got.Location() != time.UTC {
		t.Errorf("default zone: %s", got)
	}
	if got := mustSpec(t, "0 9 * * *", "Asia/Tokyo").Next(from); got.Format(time.RFC3339) != "2025-01-02T00:00:00Z" {
		t.Errorf("explicit zone: %s", got)
	}
}

// badSpecs are rejected, each with a message naming the problem.
var badSpecs = []struct{ spec, zone, want string }{
	{"", "", "empty spec"},
	{"not a spec", "", "not a spec"},
	{"* * * *", "", "expected"},
	{"61 * * * *", "", "61"},
	{"0 0 30 2 *", "", "never fires"},
	{"0 0 31 4 *", "", "never fires"},
	{"TZ=Europe/Berlin", "", "time zone prefix without a schedule"},
	{"CRON_TZ=", "", "time zone prefix without a schedule"},
	{"TZ= 0 * * * *", "", "empty time zone"},
	{"CRON_TZ=Mars/Olympus 0 * * * *", "", "unknown time zone"},
	{"0 * * * *", "Mars/Olympus", "unknown time zone"},
	{"CRON_TZ=UTC 0 * * * *", "Europe/Berlin", "both"},
	{"CRON_TZ=UTC TZ=UTC 0 * * * *", "", "more than one"},
	{"0 * * * *", "Local", "Local"},
	{"@every -1s", "", "every"},
	{"@fortnightly", "", "fortnightly"},
}

func TestParseSpecRejects(t *testing.T) {
	t.Parallel()
	for _, c := range badSpecs {
		_, err := scheduler.ParseSpec(c.spec, c.zone)
		if !errors.Is(err, scheduler.ErrInvalidSpec) {
			t.Errorf("%q (zone %q): err = %v, want ErrInvalidSpec", c.spec, c.zone, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q does not mention %q", c.spec, err, c.want)
		}
		t.Logf("%q: %v", c.spec, err)
	}
}

// fires lists the fire times of spec in [from, to).
func fires(s *scheduler.Spec, from, to time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(to); t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

func local(ts []time.Time, loc *time.Location) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.In(loc).Format("01-02 15:04 MST")
	}
	return out
}

func TestDSTPolicy(t *testing.T) {
	t.Parallel()
	la, _ := time.LoadLocation("America/Los_Angeles")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	cases := []struct {
		name, spec string
		loc        *time.Location
		from, to   time.Time
		want       []string
	}{
		{
			// 2025-03-09 02:00 PST jumps to 03:00 PDT: 02:30 runs at the jump.
			"LA gap daily", "CRON_TZ=America/Los_Angeles 30 2 * * *", la,
			time.Date(2025, 3, 8, 0, 0, 0, 0, la), time.Date(2025, 3, 11, 0, 0, 0, 0, la),
			[]string{"03-08 02:30 PST", "03-09 03:00 PDT", "03-10 02:30 PDT"},
		},
		{
			// Every 15 minutes across the gap: the gap's times run once, at the jump.
			"LA gap quarter-hourly", "CRON_TZ=America/Los_Angeles */15 1-3 9 3 *", la,
			time.Date(2025, 3, 9, 1, 30, 0, 0, la), time.Date(2025, 3, 9, 3, 31, 0, 0, la),
			[]string{"03-09 01:30 PST", "03-09 01:45 PST", "03-09 03:00 PDT", "03-09 03:15 PDT", "03-09 03:30 PDT"},
		},
		{
			// 2025-11-02 02:00 PDT falls back to 01:00 PST: 01:30 runs once, at its first occurrence.
			"LA overlap daily", "CRON_TZ=America/Los_Angeles 30 1 * * *", la,
			time.Date(2025, 11, 1, 0, 0, 0, 0, la), time.Date(2025, 11, 4, 0, 0, 0, 0, la),
			[]string{"11-01 01:30 PDT", "11-02 01:30 PDT", "11-03 01:30 PST"},
		},
		{
			"LA overlap hourly", "CRON_TZ=America/Los_Angeles 0 * * * *", la,
			time.Date(2025, 11, 2, 0, 0, 0, 0, la), time.Date(2025, 11, 2, 3, 30, 0, 0, la),
			[]string{"11-02 00:00 PDT", "11-02 01:00 PDT", "11-02 02:00 PST", "11-02 03:00 PST"},
		},
		{
			// 2025-03-30 02:00 CET jumps to 03:00 CEST.
			"Berlin gap", "CRON_TZ=Europe/Berlin 30 2 * * *", berlin,
			time.Date(2025, 3, 29, 0, 0, 0, 0, berlin), time.Date(2025, 4, 1, 0, 0, 0, 0, berlin),
			[]string{"03-29 02:30 CET", "03-30 03:00 CEST", "03-31 02:30 CEST"},
		},
		{
			// 2025-10-26 03:00 CEST falls back to 02:00 CET.
			"Berlin overlap", "CRON_TZ=Europe/Berlin 30 2 * * *", berlin,
			time.Date(2025, 10, 25, 0, 0, 0, 0, berlin), time.Date(2025, 10, 28, 0, 0, 0, 0, berlin),
			[]string{"10-25 02:30 CEST", "10-26 02:30 CEST", "10-27 02:30 CET"},
		},
		{
			// @every is absolute time: DST does not touch it.
			"every across gap", "CRON_TZ=Europe/Berlin @every 30m", berlin,
			time.Date(2025, 3, 30, 1, 0, 0, 0, berlin), time.Date(2025, 3, 30, 3, 31, 0, 0, berlin),
			[]string{"03-30 01:30 CET", "03-30 03:00 CEST", "03-30 03:30 CEST"},
		},
	}
	for _, c := range cases {
		s := mustSpec(t, c.spec, "")
		var got []string
		if strings.Contains(c.spec, "@every") {
			// @every counts from the time given.
			var ts []time.Time
			for at := s.Next(c.from); at.Before(c.to); at = s.Next(at) {
				ts = append(ts, at)
			}
			got = local(ts, c.loc)
		} else {
			got = local(fires(s, c.from, c.to), c.loc)
		}
		if strings.Join(got, ", ") != strings.Join(c.want, ", ") {
			t.Errorf("%s:\n got  %v\n want %v", c.name, got, c.want)
		}
	}
}

func TestOffsetStableAndSpread(t *testing.T) {
	t.Parallel()
	const w = 10 * time.Minute
	if scheduler.Offset("a", w) != scheduler.Offset("a", w) {
		t.Fatal("offset not stable")
	}
	if scheduler.Offset("a", 0) != 0 {
		t.Fatal("zero window must give zero offset")
	}
	distinct := map[time.Duration]bool{}
	for i := range 100 {
		o := scheduler.Offset("tenant-"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26)), w)
		if o < 0 || o >= w {
			t.Fatalf("offset %s outside [0, %s)", o, w)
		}
		distinct[o] = true
	}
	if len(distinct) < 95 {
		t.Errorf("only %d distinct offsets for 100 names", len(distinct))
	}
}
