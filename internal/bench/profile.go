package bench

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
)

// profile starts the Go CPU profile of scenario's timed part, when one was
// asked for, and returns the function that stops it and closes the file.
func (r *Runner) profile(scenario string) (stop func() error, err error) {
	path := r.cfg.CPUProfile
	if path == "" {
		return func() error { return nil }, nil
	}
	if len(r.scenarios) > 1 {
		ext := filepath.Ext(path)
		path = strings.TrimSuffix(path, ext) + "." + scenario + ext
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
		r.logf("%s: CPU profile written to %s", scenario, path)
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
