package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// timedPart brackets a scenario's timed part: the Go CPU profile, when one
// was asked for, and the CPU use of the bench (with children, its worker
// processes) and of the server.
type timedPart struct {
	stopProfile func() error
	clock       *cpuClock
	from, to    cpuTimes
}

// startTimed starts scenario's timed part.
func (r *Runner) startTimed(ctx context.Context, db *pgxpool.Pool, scenario string, children []int) (*timedPart, error) {
	path := r.cfg.CPUProfile
	// A scenario's second timed part (serial's plain jobs, say) writes a
	// file of its own too, instead of overwriting the first's.
	if path != "" && (len(r.scenarios) > 1 || scenario != r.cfg.Scenario) {
		ext := filepath.Ext(path)
		path = strings.TrimSuffix(path, ext) + "." + scenario + ext
	}
	stop, err := startProfile(path, func(f string, a ...any) { r.logf(f, a...) }, scenario)
	if err != nil {
		return nil, err
	}
	t := &timedPart{stopProfile: stop, clock: newCPUClock(ctx, db)}
	t.clock.children = children
	t.from = t.clock.read()
	return t, nil
}

// stop ends the timed part: it reads the CPU clock, then stops the profile.
func (t *timedPart) stop() error {
	t.to = t.clock.read()
	return t.stopProfile()
}

// cpu is the CPU the stopped timed part used for jobs jobs.
func (t *timedPart) cpu(jobs int) cpuUse { return t.clock.use(t.from, t.to, jobs) }

// startProfile starts a Go CPU profile into path, unless path is empty,
// and returns the function that stops it, closes the file and says so
// through logf.
func startProfile(path string, logf func(string, ...any), scenario string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return err
		}
		logf("%s: CPU profile written to %s", scenario, path)
		return nil
	}, nil
}

// resetPeakRSS sets the kernel's peak resident set size of this process
// (VmHWM) to its current RSS, so that peakRSSMiB measures from here. It
// does nothing where /proc/self/clear_refs is missing or not writable.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMiB returns this process's peak resident set size (VmHWM) in MiB,
// or 0 where /proc/self/status does not report it.
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
		if err != nil {
			return 0
		}
		return kb / 1024
	}
	return 0
}
