package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ErrInvalidSpec wraps every rejection of a cron spec or time zone.
var ErrInvalidSpec = errors.New("docket: invalid schedule spec")

// parser accepts 5 fields, an optional leading seconds field and
// descriptors (@hourly, @every 1h30m).
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a parsed cron spec with its time zone. Its Next applies Docket's
// DST policy (see the package doc); the zero value is not usable.
type Spec struct {
	text  string
	loc   *time.Location
	cal   *cron.SpecSchedule          // calendar specs, evaluated in wall-clock time
	every *cron.ConstantDelaySchedule // @every specs, evaluated in absolute time
}

// ParseSpec parses a cron spec: 5 fields (minute hour day-of-month month
// day-of-week), or 6 with leading seconds, or a descriptor (@yearly,
// @monthly, @weekly, @daily, @hourly, @every <duration>), optionally
// prefixed by CRON_TZ=<zone> or TZ=<zone>. zone, when not empty, is an IANA
// time zone for specs without a prefix; giving both is an error. Without
// either the spec is in UTC. It returns an error wrapping ErrInvalidSpec for
// an unparsable spec, a malformed or unknown zone, or a spec that never
// fires. It never panics.
func ParseSpec(spec, zone string) (*Spec, error) {
	text := strings.TrimSpace(spec)
	if text == "" {
		return nil, fmt.Errorf("%w: empty spec", ErrInvalidSpec)
	}
	body := text
	if strings.HasPrefix(text, "TZ=") || strings.HasPrefix(text, "CRON_TZ=") {
		// Pre-validate the prefix: robfig/cron slices up to the first space
		// and panics when there is none.
		eq := strings.IndexByte(text, '=')
		sp := strings.IndexAny(text, " \t")
		if sp < 0 {
			return nil, fmt.Errorf("%w: %q: time zone prefix without a schedule after it", ErrInvalidSpec, text)
		}
		if zone != "" {
			return nil, fmt.Errorf("%w: %q: time zone given both in the spec and as %q", ErrInvalidSpec, text, zone)
		}
		zone = text[eq+1 : sp]
		if zone == "" {
			return nil, fmt.Errorf("%w: %q: empty time zone after %s", ErrInvalidSpec, text, text[:eq+1])
		}
		body = strings.TrimSpace(text[sp:])
	}
	loc := time.UTC
	if zone != "" {
		if strings.EqualFold(zone, "local") {
			// Local depends on the host: the same spec would fire at
			// different times on different machines.
			return nil, fmt.Errorf("%w: %q: time zone Local is not allowed; name the zone", ErrInvalidSpec, text)
		}
		l, err := time.LoadLocation(zone)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: unknown time zone %q: %v", ErrInvalidSpec, text, zone, err)
		}
		loc = l
	}
	if strings.HasPrefix(body, "TZ=") || strings.HasPrefix(body, "CRON_TZ=") {
		return nil, fmt.Errorf("%w: %q: more than one time zone prefix", ErrInvalidSpec, text)
	}
	sched, err := parse(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidSpec, text, err)
	}
	s := &Spec{text: text, loc: loc}
	switch v := sched.(type) {
	case *cron.SpecSchedule:
		// Evaluate in UTC-as-wall-clock; Next maps wall times to the zone.
		c := *v
		c.Location = time.UTC
		s.cal = &c
	case cron.ConstantDelaySchedule:
		// cron rounds anything below a second (even negative) up to 1s.
		d, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(body, "@every")))
		if err != nil || d < time.Second {
			return nil, fmt.Errorf("%w: %q: @every needs a duration of at least 1s", ErrInvalidSpec, text)
		}
		s.every = &v
	default:
		return nil, fmt.Errorf("%w: %q: unsupported schedule type %T", ErrInvalidSpec, text, sched)
	}
	// A spec that never fires (30 February) makes cron's Next return the
	// zero time. Look from a few starting points: leap days fire only in
	// leap years, within the five years cron searches.
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("%w: %q never fires", ErrInvalidSpec, text)
	}
	return s, nil
}

// parse calls the cron parser, turning a panic into an error.
func parse(body string) (s cron.Schedule, err error) {
	defer func() {
		if v := recover(); v != nil {
			s, err = nil, fmt.Errorf("cron parser panicked: %v", v)
		}
	}()
	return parser.Parse(body)
}

// String returns the spec as given.
func (s *Spec) String() string { return s.text }

// Location returns the spec's time zone (UTC unless one was given).
func (s *Spec) Location() *time.Location { return s.loc }

// Next returns the first fire time strictly after t, or the zero time if
// there is none within five years. Calendar specs are evaluated on the
// wall clock of the spec's zone, with this DST policy: a wall time that
// falls into a spring-forward gap fires at the instant of the jump (and
// once only, if several gap times map to it); a wall time that occurs twice
// in a fall-back overlap fires once, at its first occurrence. @every specs
// are plain durations in absolute time.
func (s *Spec) Next(t time.Time) time.Time {
	if s.every != nil {
		return s.every.Next(t).UTC()
	}
	wall := toWall(t.In(s.loc))
	for range 1000 {
		w := s.cal.Next(wall)
		if w.IsZero() {
			return time.Time{}
		}
		for _, inst := range fromWall(w, s.loc) {
			if inst.After(t) {
				return inst.UTC()
			}
		}
		wall = w
	}
	return time.Time{}
}

// toWall returns t's wall clock in t's zone as the same reading in UTC.
func toWall(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// fromWall returns the instants at which loc's clocks read w (a wall clock
// carried in UTC), earliest first: one normally, two in a fall-back overlap.
// A reading that does not exist (spring-forward gap) maps to the instant of
// the jump.
func fromWall(w time.Time, loc *time.Location) []time.Time {
	_, offBefore := w.Add(-48 * time.Hour).In(loc).Zone()
	_, offAfter := w.Add(48 * time.Hour).In(loc).Zone()
	var out []time.Time
	for _, off := range []int{offBefore, offAfter} {
		inst := w.Add(-time.Duration(off) * time.Second)
		if toWall(inst.In(loc)).Equal(w) && (len(out) == 0 || !out[0].Equal(inst)) {
			out = append(out, inst)
		}
	}
	if len(out) == 2 && out[1].Before(out[0]) {
		out[0], out[1] = out[1], out[0]
	}
	if len(out) > 0 {
		return out
	}
	// In a gap: the reading under the new offset lies before the jump, in
	// the old zone period, whose end is the jump.
	early := w.Add(-time.Duration(offAfter) * time.Second).In(loc)
	if _, end := early.ZoneBounds(); !end.IsZero() {
		return []time.Time{end}
	}
	return []time.Time{w.Add(-time.Duration(offBefore) * time.Second)}
}

// after returns the first fire time strictly after t in the sequence that
// anchor (a fire time) belongs to: for calendar specs simply Next(t); for
// @every specs anchor plus a whole number of periods, so that skipping
// missed runs keeps the schedule's phase.
func (s *Spec) after(anchor, t time.Time) time.Time {
	if s.every == nil {
		return s.Next(t)
	}
	d := s.every.Delay
	if t.Before(anchor) {
		return anchor
	}
	return anchor.Add((t.Sub(anchor)/d + 1) * d)
}

// latestUpTo returns the last fire time at or before t in anchor's
// sequence, starting from anchor (anchor itself if no later one is due),
// looking at most at limit fire times for calendar specs.
func (s *Spec) latestUpTo(anchor, t time.Time, limit int) time.Time {
	if s.every != nil {
		if t.Before(anchor) {
			return anchor
		}
		return anchor.Add(t.Sub(anchor) / s.every.Delay * s.every.Delay)
	}
	last := anchor
	for range limit {
		nx := s.Next(last)
		if nx.IsZero() || nx.After(t) {
			break
		}
		last = nx
	}
	return last
}
