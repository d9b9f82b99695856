package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	docket "github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"
)

// Job is a claimed job together with its decoded args, as a typed handler
// receives it. The embedded *docket.Job carries the id, kind, attempt, max
// attempts, meta and the raw payload (its fields are listed at
// [github.com/docketq/docket.Job]); Args is that payload decoded into T.
type Job[T docket.Args] struct {
	*docket.Job
	Args T
}

// HandlerFunc handles jobs whose args are a T. Its returned error decides
// the job's outcome: nil completes it; [Snooze], [RetryAfter] and [Cancel]
// steer it; any other error is a failed attempt. ctx is cancelled when the
// kind's timeout elapses, when the worker loses the job's lease and when
// shutdown's deadline passes (see context.Cause).
type HandlerFunc[T docket.Args] func(ctx context.Context, job *Job[T]) error

// TxHandlerFunc is a HandlerFunc that runs inside a transaction: the job's
// completion is written in tx and commits together with the handler's own
// writes, so its database effects happen exactly once. If the handler
// returns an error (or panics), tx is rolled back and the failure recorded.
// The handler must not commit or roll back tx itself.
type TxHandlerFunc[T docket.Args] func(ctx context.Context, tx pgx.Tx, job *Job[T]) error

// KindOpts are the per-kind options given at registration. The zero value
// means: queue "default", priority 0, 25 attempts, no timeout,
// [outbox.Backoff].
//
// Queue, Priority and MaxAttempts are enqueue defaults, nothing more: an
// outbox client whose Config.Kinds is the registry (as docket.NewClient
// sets it) writes them into a job when neither the enqueue options nor the
// args' own Opts set them. From then on the job's stored values govern it
// everywhere (the pools that claim it, the claim order, the worker and the
// reaper deciding its last attempt, `docket jobs show`, the dashboard);
// changing a kind's options later changes only jobs enqueued after. A job
// enqueued by a client without the registry gets the built-in defaults
// (queue "default", priority 0, 25 attempts), not the kind's.
//
// Timeout and Backoff are per kind only: jobs have no value of their own,
// so every run of the kind gets the options of the worker that runs it. A
// handler sets one retry's delay with [RetryAfter].
type KindOpts struct {
	// Queue is the queue jobs of the kind are enqueued into when the
	// enqueue options name none. Empty means "default". Which pools run a
	// job depends only on the queue it was stored in.
	Queue string
	// Priority is the priority jobs of the kind are enqueued with when the
	// enqueue options set none, in outbox.MinPriority..outbox.MaxPriority.
	// Zero means 0. Claims order a queue by each job's stored priority.
	Priority int
	// MaxAttempts is how many runs a job of this kind gets when the
	// enqueue options set none: it is written on enqueue, and the job's
	// stored value is what the worker and the reaper obey, more or fewer
	// than this. Zero means 25 (outbox.DefaultMaxAttempts). Negative is an
	// error.
	MaxAttempts int
	// Timeout bounds one run of every job of the kind: the handler's
	// context is cancelled with cause [ErrTimeout] and an error returned
	// after it counts as a failed attempt. Zero means no timeout. Negative
	// is an error.
	Timeout time.Duration
	// Backoff gives the delay before the next attempt after failed attempt
	// n (1 for the first), for every job of the kind; [RetryAfter] overrides
	// it for one retry. Nil means [outbox.Backoff]. It must be safe for
	// concurrent use.
	Backoff func(attempt int) time.Duration
}

// kind is one registered handler, type-erased.
type kind struct {
	name    string
	opts    KindOpts
	tx      bool
	backoff func(int) time.Duration
	hook    OutcomeHook // nil unless set with SetOutcomeHook
	// inner decodes the payload and calls the handler; tx is nil unless the
	// handler is transactional. It recovers the handler's panics.
	inner func(ctx context.Context, tx pgx.Tx, job *docket.Job) error
}

// Registry maps kinds to their handlers and options. Register everything
// before passing it to [NewWorker], which takes a snapshot. The zero value
// is not usable; create one with [NewRegistry]. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]*kind
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[string]*kind{}} }

// Registration errors. Both are wrapped with the kind's name.
var (
	// ErrDuplicateKind: a handler for the kind is already registered.
	ErrDuplicateKind = errors.New("docket: kind already registered")
	// ErrInvalidKind: the kind name or its options are invalid.
	ErrInvalidKind = errors.New("docket: invalid kind registration")
)

// Register registers h for the args type T, whose kind is the Kind() of T's
// zero value. It returns an error wrapping [ErrDuplicateKind] if the kind is
// taken, or [ErrInvalidKind] for a nil handler, an invalid kind name or
// invalid options.
func Register[T docket.Args](r *Registry, h HandlerFunc[T], opts KindOpts) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler for %s", ErrInvalidKind, typeName[T]())
	}
	return add[T](r, opts, false, func(ctx context.Context, _ pgx.Tx, j *Job[T]) error { return h(ctx, j) })
}

// MustRegister is [Register] that panics on error, for registrations that
// are fixed in code.
func MustRegister[T docket.Args](r *Registry, h HandlerFunc[T], opts KindOpts) {
	if err := Register(r, h, opts); err != nil {
		panic(err)
	}
}

// RegisterTx registers a transactional handler for the args type T; see
// [TxHandlerFunc]. Errors are those of [Register].
func RegisterTx[T docket.Args](r *Registry, h TxHandlerFunc[T], opts KindOpts) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler for %s", ErrInvalidKind, typeName[T]())
	}
	return add[T](r, opts, true, func(ctx context.Context, tx pgx.Tx, j *Job[T]) error { return h(ctx, tx, j) })
}

// MustRegisterTx is [RegisterTx] that panics on error.
func MustRegisterTx[T docket.Args](r *Registry, h TxHandlerFunc[T], opts KindOpts) {
	if err := RegisterTx(r, h, opts); err != nil {
		panic(err)
	}
}

func add[T docket.Args](r *Registry, opts KindOpts, tx bool, h func(context.Context, pgx.Tx, *Job[T]) error) error {
	name, err := kindOf[T]()
	if err != nil {
		return err
	}
	if err := checkName("kind", name, false); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidKind, err)
	}
	if err := checkName("queue", opts.Queue, true); err != nil {
		return fmt.Errorf("%w: kind %s: %w", ErrInvalidKind, name, err)
	}
	if opts.Priority < outbox.MinPriority || opts.Priority > outbox.MaxPriority {
		return fmt.Errorf("%w: kind %s: priority %d outside %d..%d", ErrInvalidKind, name, opts.Priority, outbox.MinPriority, outbox.MaxPriority)
	}
	if opts.MaxAttempts < 0 {
		return fmt.Errorf("%w: kind %s: negative MaxAttempts", ErrInvalidKind, name)
	}
	if opts.Timeout < 0 {
		return fmt.Errorf("%w: kind %s: negative Timeout", ErrInvalidKind, name)
	}
	backoff := opts.Backoff
	if backoff == nil {
		backoff = outbox.Backoff
	}
	tname := typeName[T]()
	k := &kind{name: name, opts: opts, tx: tx, backoff: backoff}
	k.inner = func(ctx context.Context, tx pgx.Tx, dj *docket.Job) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		j := &Job[T]{Job: dj}
		if err := json.Unmarshal(dj.Payload, &j.Args); err != nil {
			return &DecodeError{Kind: name, Type: tname, Detail: decodeDetail(err)}
		}
		return h(ctx, tx, j)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.kinds[name]; ok {
		return fmt.Errorf("%w: %s (%s)", ErrDuplicateKind, name, tname)
	}
	r.kinds[name] = k
	return nil
}

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.kinds))
	for k := range r.kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// EnqueueDefaults returns the Queue, Priority and MaxAttempts kind was
// registered with, and false for a kind not registered. It makes the
// registry an [outbox.Kinds], so every enqueue of an outbox client
// configured with it applies the kind's defaults and rejects unknown kinds.
func (r *Registry) EnqueueDefaults(kind string) (outbox.Opts, bool) {
	k := r.lookup(kind)
	if k == nil {
		return outbox.Opts{}, false
	}
	return outbox.Opts{Queue: k.opts.Queue, Priority: k.opts.Priority, MaxAttempts: k.opts.MaxAttempts}, true
}

var _ outbox.Kinds = (*Registry)(nil)

// Queues returns the queues the registered kinds are enqueued into by
// default ("default" for kinds without one), sorted and without repeats.
func (r *Registry) Queues() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, k := range r.kinds {
		q := k.opts.Queue
		if q == "" {
			q = outbox.DefaultQueue
		}
		out = append(out, q)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (r *Registry) lookup(name string) *kind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.kinds[name]
}

func (r *Registry) snapshot() map[string]*kind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]*kind, len(r.kinds))
	for n, k := range r.kinds {
		out[n] = k
	}
	return out
}

// kindOf calls Kind on T's zero value; a nil-pointer T whose Kind
// dereferences is reported instead of crashing.
func kindOf[T docket.Args]() (name string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %s: Kind() on the zero value panicked: %v", ErrInvalidKind, typeName[T](), v)
		}
	}()
	var zero T
	return zero.Kind(), nil
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// checkName applies outbox's rules for queue and kind names.
func checkName(what, v string, emptyOK bool) error {
	if v == "" {
		if emptyOK {
			return nil
		}
		return fmt.Errorf("empty %s name", what)
	}
	if len(v) > outbox.MaxNameLen {
		return fmt.Errorf("%s name longer than %d bytes", what, outbox.MaxNameLen)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return fmt.Errorf("%s name %q contains spaces or control characters", what, v)
	}
	return nil
}

// decodeDetail describes a JSON decoding error without quoting the payload:
// encoding/json's messages may include a number or a character from it.
func decodeDetail(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at offset %d", syn.Offset)
	case errors.As(err, &typ):
		got, _, _ := strings.Cut(typ.Value, " ") // "number 3.5" -> "number"
		field := typ.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Sprintf("field %s: JSON %s cannot go into Go %s", field, got, typ.Type)
	}
	// Errors of custom UnmarshalJSON methods may quote the input: name the
	// error's type only.
	return fmt.Sprintf("decoding failed (%T)", err)
}
