//go:build race

package worker

// raceDetector says the tests run under the race detector, which slows
// every goroutine handoff several times over: tests of start times within
// milliseconds skip.
const raceDetector = true
