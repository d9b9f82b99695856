package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNoResult is what JobResult returns, wrapped with the job's id and
// state, for a job that recorded no result: it is still live, or finished
// without calling Job.SetResult.
var ErrNoResult = errors.New("docket: job recorded no result")

// JobResult decodes the result that job id's handler recorded with
// Job.SetResult into a T (as json.Unmarshal does): a completed job's, or
// the last attempt's of a dead one. It returns an error wrapping
// ErrJobNotFound for an unknown id, ErrNoResult for a job without one, and
// the decoding error when the result is not a T. To read the raw JSON, use
// Jobs().Get with withPayload set (JobInfo.Result).
func JobResult[T any](ctx context.Context, c *Client, db DB, id int64) (T, error) {
	var out T
	j, err := c.Jobs().Get(ctx, db, id, true)
	if err != nil {
		return out, err
	}
	if j.Result == nil {
		return out, fmt.Errorf("%w: job %d kind %s is %s", ErrNoResult, id, j.Kind, j.State)
	}
	if err := json.Unmarshal(j.Result, &out); err != nil {
		return out, fmt.Errorf("docket: job %d kind %s: decode result: %w", id, j.Kind, err)
	}
	return out, nil
}
