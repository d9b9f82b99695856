//go:build !race

package worker

// raceDetector says the tests run under the race detector (see
// race_test.go).
const raceDetector = false
