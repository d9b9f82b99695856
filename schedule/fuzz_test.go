package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/docketq/docket/schedule"
)

// FuzzSpec checks that parsing a spec never panics and rejects with
// ErrInvalidSpec, and that an accepted spec's Next is strictly after its
// input, in UTC, and monotonic (or zero when the spec fires no more).
func FuzzSpec(f *testing.F) {
	start := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC).Unix()
	for _, s := range []struct {
		spec, zone string
		at         int64
	}{
		{"*/5 * * * *", "", start},
		{"0 2 * * *", "Europe/Berlin", start},
		{"30 2 * * *", "America/New_York", time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC).Unix()},
		{"30 1 * * *", "America/New_York", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Unix()},
		{"0 0 29 2 *", "", start},
		{"0 0 30 2 *", "", start},
		{"0 0 31 4 *", "", start},
		{"@every 1h30m", "", start},
		{"@every 500ms", "", start},
		{"@every -1s", "", start},
		{"@hourly", "Australia/Lord_Howe", start},
		{"CRON_TZ=Asia/Kolkata 15 9 * * 1-5", "", start},
		{"TZ=", "", start},
		{"TZ=UTC", "", start},
		{"TZ=UTC TZ=UTC * * * * *", "", start},
		{"TZ=Local * * * * *", "", start},
		{"0 0 0 * * *", "", start},
		{"*/0 * * * *", "", start},
		{"60 * * * *", "", start},
		{"1-0 * * * *", "", start},
		{"0 0 L * *", "", start},
		{"0 0 ? * MON", "", start},
		{"* * * * * * *", "", start},
		{"0 0 1 1 *", "Pacific/Apia", time.Date(2011, 12, 29, 0, 0, 0, 0, time.UTC).Unix()},
		{"* * * * *", "", -62135596800},
		{"* * * * *", "", 253402300799},
	} {
		f.Add(s.spec, s.zone, s.at)
	}
	f.Fuzz(func(t *testing.T, spec, zone string, at int64) {
		s, err := schedule.ParseSpec(spec, zone)
		if err != nil {
			if !errors.Is(err, schedule.ErrInvalidSpec) {
				t.Fatalf("ParseSpec(%q, %q) error %v does not wrap ErrInvalidSpec", spec, zone, err)
			}
			return
		}
		if s.Location() == nil {
			t.Fatalf("ParseSpec(%q, %q): nil location", spec, zone)
		}
		// Any second of years 1..9999, the range a time.Time formats.
		const lo, hi = -62135596800, 253402300799
		at = lo + (at%(hi-lo)+(hi-lo))%(hi-lo)
		t0 := time.Unix(at, 0).UTC()
		prev := t0
		for i := range 3 {
			n := s.Next(prev)
			if n.IsZero() {
				return
			}
			if !n.After(prev) {
				t.Fatalf("%q in %q: Next #%d of %s = %s, not after it", spec, s.Location(), i+1, prev, n)
			}
			if n.Location() != time.UTC {
				t.Fatalf("%q: Next(%s) = %s, not in UTC", spec, prev, n)
			}
			prev = n
		}
	})
}

// FuzzOffset checks that a schedule's spread offset is in whole
// milliseconds within [0, window) and the same on every call.
func FuzzOffset(f *testing.F) {
	f.Add("", int64(0))
	f.Add("tenant-1/report", int64(time.Hour))
	f.Add("tenant-2/report", int64(time.Millisecond))
	f.Add("x", int64(999*time.Microsecond))
	f.Add("x", int64(-time.Second))
	f.Add("\xff\x00名前", int64(1<<62))
	f.Fuzz(func(t *testing.T, name string, window int64) {
		w := time.Duration(window)
		off := schedule.Offset(name, w)
		if off != schedule.Offset(name, w) {
			t.Fatalf("Offset(%q, %s) is not stable", name, w)
		}
		if off%time.Millisecond != 0 {
			t.Fatalf("Offset(%q, %s) = %s, not whole milliseconds", name, w, off)
		}
		if w < time.Millisecond {
			if off != 0 {
				t.Fatalf("Offset(%q, %s) = %s, want 0 for a window under 1ms", name, w, off)
			}
			return
		}
		if off < 0 || off >= w {
			t.Fatalf("Offset(%q, %s) = %s, outside [0, window)", name, w, off)
		}
	})
}
