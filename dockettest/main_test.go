package dockettest_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/docketq/docket/dockettest"
)

func TestMain(m *testing.M) { dockettest.Main(m) }

// exampleT stands in for a test's *testing.T in the examples: it prints a
// failure instead of failing, and runs cleanups when done is called.
type exampleT struct{ cleanups []func() }

func (*exampleT) Helper()                           {}
func (*exampleT) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (*exampleT) Fatalf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (t *exampleT) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }

func (t *exampleT) done() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
}

// EmailArgs is the job the examples and tests enqueue.
type EmailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject,omitempty"`
}

func (EmailArgs) Kind() string { return "email" }
