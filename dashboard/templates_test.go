package dashboard

import (
	"strings"
	"testing"
	"time"
)

func TestDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                              "0 s",
		-time.Second:                   "0 s",
		850 * time.Millisecond:         "850 ms",
		12 * time.Second:               "12 s",
		4*time.Minute + 12*time.Second: "4 min 12 s",
		5 * time.Minute:                "5 min",
		2*time.Hour + 5*time.Minute:    "2 h 5 min",
		88*time.Hour + 22*time.Minute:  "3 d 16 h",
		23*time.Hour + 59*time.Minute + 40*time.Second:         "1 d",
		59*time.Minute + 59*time.Second + 600*time.Millisecond: "1 h",
		1500 * 24 * time.Hour:                                  "1,500 d",
	} {
		if got := dur(d); got != want {
			t.Errorf("dur(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestAgoAndStamp(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "–"},
		{now, "now"},
		{now.Add(-3*time.Minute - 200*time.Millisecond), "3 min ago"},
		{now.Add(2*time.Hour + 500*time.Millisecond), "in 2 h"},
	} {
		if got := ago(c.t); got != c.want {
			t.Errorf("ago(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	at := time.Date(2026, 11, 27, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	s := string(stamp(at))
	if !strings.Contains(s, `datetime="2026-11-27T02:04:05Z"`) || !strings.Contains(s, `title="2026-11-27 02:04:05 UTC"`) || !strings.Contains(s, " ago</time>") {
		t.Errorf("stamp = %s", s)
	}
	if stamp(time.Time{}) != "–" {
		t.Errorf("stamp(zero) = %s", stamp(time.Time{}))
	}
}

func TestNum(t *testing.T) {
	for _, c := range []struct {
		n    any
		want string
	}{{0, "0"}, {1234, "1,234"}, {int64(1_000_000), "1,000,000"}, {int32(-5000), "-5,000"}, {uint64(1 << 63), "9223372036854775808"}, {"x", "x"}} {
		if got := num(c.n); got != c.want {
			t.Errorf("num(%v) = %q, want %q", c.n, got, c.want)
		}
	}
}
