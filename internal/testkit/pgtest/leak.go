package pgtest

import (
	"runtime"
	"strings"
	"time"
)

// waitForLeaks waits up to timeout for goroutines started by Docket code to
// end, and returns the stacks of those still running ("" if none).
func waitForLeaks(timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for {
		leaks := docketGoroutines()
		if len(leaks) == 0 || time.Now().After(deadline) {
			return strings.Join(leaks, "\n\n")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// docketGoroutines returns the stacks of all goroutines but the calling one
// that run Docket code or were started by it. Goroutines of the runtime,
// testing, os/signal or of libraries such as pgxpool that Docket code did
// not start carry no frame of the module and are left out.
func docketGoroutines() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var leaks []string
	// Goroutines are separated by blank lines; the caller's comes first.
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && (strings.Contains(g, modulePath+"/") || strings.Contains(g, modulePath+".")) {
			leaks = append(leaks, g)
		}
	}
	return leaks
}
