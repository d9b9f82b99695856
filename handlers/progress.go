package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
)

// MaxProgressBytes bounds what one SetProgress may record: the value as
// JSON text (and as PostgreSQL writes it back) and the message together,
// in bytes.
const MaxProgressBytes = core.MaxProgressBytes

// ErrInvalidProgress is returned by SetProgress for a value that does not
// encode to JSON PostgreSQL can store, a message that is not valid text,
// or the two together over MaxProgressBytes. The job's recorded progress
// is left as it was.
var ErrInvalidProgress = errors.New("docket: invalid job progress")

// ErrNoJob is returned by SetProgress called with a context that is not a
// job handler's (or one derived from it).
var ErrNoJob = errors.New("docket: not in a job handler")

// SetProgress records the running job's progress: a small JSON value
// (value is encoded with encoding/json; nil records none) and a message
// for people. The worker writes it with its next heartbeat, within about
// a second, in the statement that extends its jobs' leases: a call costs
// no round trip to the database, and of calls made in between only the
// last is written. Operators see it in docket jobs show, the dashboard's
// job page and admin Jobs.Get; a job that dies keeps its last progress in
// the dead-letter table, a completed job does not keep it in history.
//
// ctx is the handler's context or one derived from it. SetProgress returns
// ErrInvalidProgress (wrapped, saying why) for a value that cannot be
// stored or a value and message over MaxProgressBytes, and ErrNoJob outside
// a handler. It is safe to call from several goroutines.
func SetProgress(ctx context.Context, value any, message string) error {
	r := core.ProgressOf(ctx)
	if r == nil {
		return ErrNoJob
	}
	var b json.RawMessage
	if value != nil {
		var err error
		if b, err = json.Marshal(value); err != nil {
			return fmt.Errorf("%w: encode value: %w", ErrInvalidProgress, err)
		}
		if string(b) == "null" {
			b = nil
		}
	}
	if !utf8.ValidString(message) || strings.ContainsRune(message, 0) {
		return fmt.Errorf("%w: message is not valid UTF-8 text without NUL", ErrInvalidProgress)
	}
	size := int64(len(message))
	if b != nil {
		if !utf8.Valid(b) {
			return fmt.Errorf("%w: value is not valid UTF-8", ErrInvalidProgress)
		}
		rendered, problem := enqueue.CheckJSONB(b)
		if problem != "" {
			return fmt.Errorf("%w: value %s", ErrInvalidProgress, problem)
		}
		size += max(int64(len(b)), rendered)
	}
	if size > MaxProgressBytes {
		return fmt.Errorf("%w: value and message are %d bytes, over the limit of %d", ErrInvalidProgress, size, MaxProgressBytes)
	}
	r.ReportProgress(b, message)
	return nil
}
