package handlers

import (
	"cmp"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/jackc/pgx/v5"
)

// Job is a claimed job together with its decoded args, as a typed handler
// receives it. The embedded *docket.Job carries the id, kind, attempt, max
// attempts, meta and the raw payload (its fields are listed at
// [github.com/docketq/docket.Job]); Args is that payload decoded into T.
type Job[T core.Args] struct {
	*core.Job
	Args T
}

// HandlerFunc handles jobs whose args are a T. Its returned error decides
// the job's outcome: nil completes it; [Snooze], [RetryAfter] and [Cancel]
// steer it; any other error is a failed attempt. ctx is cancelled when the
// kind's timeout elapses, when the worker loses the job's lease and when
// shutdown's deadline passes (see context.Cause).
type HandlerFunc[T core.Args] func(ctx context.Context, job *Job[T]) error

// TxHandlerFunc is a HandlerFunc that runs inside a transaction: the job's
// completion is written in tx and commits together with the handler's own
// writes, so its database effects happen exactly once. If the handler
// returns an error (or panics), tx is rolled back and the failure recorded.
// The handler must not commit or roll back tx itself.
type TxHandlerFunc[T core.Args] func(ctx context.Context, tx pgx.Tx, job *Job[T]) error

// KindOpts are the per-kind options given at registration. The zero value
// means: queue "default", priority 0, 25 attempts, no timeout, [Backoff].
// Its fields:
//
//   - Queue string: the queue jobs of the kind are enqueued into when the
//     enqueue options name none. Empty means "default". Which pools run a
//     job depends only on the queue it was stored in.
//   - Priority int: the priority jobs of the kind are enqueued with when
//     the enqueue options set none, in docket.MinPriority..MaxPriority.
//     Zero means 0. Claims order a queue by each job's stored priority.
//   - MaxAttempts int: how many runs a job of the kind gets when the
//     enqueue options set none. Zero means 25 (docket.DefaultMaxAttempts).
//     Negative is an error.
//   - Timeout time.Duration: bounds one run of every job of the kind: the
//     handler's context is cancelled with cause [ErrTimeout], and an error
//     returned after it counts as a failed attempt. Zero means no timeout.
//     Negative is an error.
//   - Backoff func(attempt int) time.Duration: the delay before the next
//     attempt after failed attempt n (1 for the first), for every job of
//     the kind; [RetryAfter] overrides it for one retry. Nil means
//     [Backoff]. It must be safe for concurrent use.
//
// Queue, Priority and MaxAttempts are enqueue defaults, nothing more: a
// client built with the registry (docket.NewClient) writes them into a job
// when neither the enqueue options nor the args' own Opts set them. From
// then on the job's stored values govern it everywhere (the pools that
// claim it, the claim order, the worker and the reaper deciding its last
// attempt, `docket jobs show`, the dashboard); changing a kind's options
// later changes only jobs enqueued after. A job enqueued by a client
// without the registry gets the built-in defaults, not the kind's.
//
// Timeout and Backoff are per kind only: jobs have no value of their own,
// so every run of the kind gets the options of the worker that runs it.
type KindOpts = core.KindOpts

// Backoff is the default retry delay after the given failed attempt (1 for
// the first): capped exponential with jitter. The un-jittered delay is
// 1s·2^(attempt-1), capped at 1 hour; the result is drawn uniformly from
// [d/2, d], so retries of jobs that failed together spread out instead of
// returning in lockstep, while each still waits at least half its step.
func Backoff(attempt int) time.Duration { return core.Backoff(attempt) }

// kind is one registered handler, type-erased.
type kind struct {
	name string
	opts KindOpts // Backoff set
	tx   bool
	// run decodes the payload and calls the handler; tx is nil unless the
	// handler is transactional. It recovers the handler's panics.
	run func(ctx context.Context, tx pgx.Tx, job *core.Job) error
}

// Registry maps kinds to their handlers and options. Register everything
// before passing it to docket.NewClient, whose worker takes a snapshot. The zero value
// is not usable; create one with [NewRegistry]. It is safe for concurrent use.
type Registry struct {
	mu sync.Mutex // held by registrations
	// kinds is never written once stored: a registration stores a copy
	// with its kind added, so Handle's lookup for every job takes no lock.
	kinds atomic.Pointer[map[string]*kind]
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	r := &Registry{}
	r.kinds.Store(&map[string]*kind{})
	return r
}

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
func Register[T core.Args](r *Registry, h HandlerFunc[T], opts KindOpts) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler for %s", ErrInvalidKind, typeName[T]())
	}
	return add[T](r, opts, false, func(ctx context.Context, _ pgx.Tx, j *Job[T]) error { return h(ctx, j) })
}

// MustRegister is [Register] that panics on error, for registrations that
// are fixed in code.
func MustRegister[T core.Args](r *Registry, h HandlerFunc[T], opts KindOpts) {
	if err := Register(r, h, opts); err != nil {
		panic(err)
	}
}

// RegisterTx registers a transactional handler for the args type T; see
// [TxHandlerFunc]. Errors are those of [Register].
func RegisterTx[T core.Args](r *Registry, h TxHandlerFunc[T], opts KindOpts) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler for %s", ErrInvalidKind, typeName[T]())
	}
	return add[T](r, opts, true, func(ctx context.Context, tx pgx.Tx, j *Job[T]) error { return h(ctx, tx, j) })
}

// MustRegisterTx is [RegisterTx] that panics on error.
func MustRegisterTx[T core.Args](r *Registry, h TxHandlerFunc[T], opts KindOpts) {
	if err := RegisterTx(r, h, opts); err != nil {
		panic(err)
	}
}

func add[T core.Args](r *Registry, opts KindOpts, tx bool, h func(context.Context, pgx.Tx, *Job[T]) error) error {
	name, err := kindOf[T]()
	if err != nil {
		return err
	}
	if err := core.CheckName("kind", name, false); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidKind, err)
	}
	if err := core.CheckName("queue", opts.Queue, true); err != nil {
		return fmt.Errorf("%w: kind %s: %w", ErrInvalidKind, name, err)
	}
	if opts.Priority < core.MinPriority || opts.Priority > core.MaxPriority {
		return fmt.Errorf("%w: kind %s: priority %d outside %d..%d", ErrInvalidKind, name, opts.Priority, core.MinPriority, core.MaxPriority)
	}
	if opts.MaxAttempts < 0 {
		return fmt.Errorf("%w: kind %s: negative MaxAttempts", ErrInvalidKind, name)
	}
	if opts.Timeout < 0 {
		return fmt.Errorf("%w: kind %s: negative Timeout", ErrInvalidKind, name)
	}
	if opts.Backoff == nil {
		opts.Backoff = core.Backoff
	}
	tname := typeName[T]()
	skipEmpty := emptyObjectIsZero[T]()
	k := &kind{name: name, opts: opts, tx: tx}
	k.run = func(ctx context.Context, tx pgx.Tx, dj *core.Job) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		j := &Job[T]{Job: dj}
		if !skipEmpty || string(dj.Payload) != "{}" {
			if err := json.Unmarshal(dj.Payload, &j.Args); err != nil {
				return &DecodeError{Kind: name, Type: tname, Detail: decodeDetail(err)}
			}
		}
		return h(ctx, tx, j)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := r.snapshot()
	if _, ok := kinds[name]; ok {
		return fmt.Errorf("%w: %s (%s)", ErrDuplicateKind, name, tname)
	}
	kinds = maps.Clone(kinds)
	kinds[name] = k
	r.kinds.Store(&kinds)
	return nil
}

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	kinds := r.snapshot()
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// KindOpts returns the options kind was registered with (Backoff filled
// in with the default when it was nil), and false for a kind not
// registered.
func (r *Registry) KindOpts(kind string) (KindOpts, bool) {
	k := r.lookup(kind)
	if k == nil {
		return KindOpts{}, false
	}
	return k.opts, true
}

// Transactional reports whether kind's handler was registered with
// [RegisterTx]: it runs in a transaction that also writes its job's
// completion.
func (r *Registry) Transactional(kind string) bool {
	k := r.lookup(kind)
	return k != nil && k.tx
}

// Handle runs the handler of job's kind on job: it decodes the payload into
// the kind's args type and calls the handler, with tx for a transactional
// kind (nil otherwise), and returns what the handler returned. A panic
// becomes a *PanicError, a payload that does not decode a *DecodeError, an
// unregistered kind an error wrapping ErrInvalidKind. It runs no
// middleware, applies no timeout and writes nothing: the worker wraps it
// in all of that (and package dockettest runs one job the same way).
func (r *Registry) Handle(ctx context.Context, tx pgx.Tx, job *core.Job) error {
	k := r.lookup(job.Kind)
	if k == nil {
		return fmt.Errorf("%w: kind %s is not registered", ErrInvalidKind, job.Kind)
	}
	return k.run(ctx, tx, job)
}

// Queues returns the queues the registered kinds are enqueued into by
// default ("default" for kinds without one), sorted and without repeats.
func (r *Registry) Queues() []string {
	var out []string
	for _, k := range r.snapshot() {
		out = append(out, cmp.Or(k.opts.Queue, core.DefaultQueue))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (r *Registry) lookup(name string) *kind { return r.snapshot()[name] }

// snapshot returns the registered kinds; the map must not be written.
func (r *Registry) snapshot() map[string]*kind {
	if p := r.kinds.Load(); p != nil {
		return *p
	}
	return nil
}

// kindOf calls Kind on T's zero value; a nil-pointer T whose Kind
// dereferences is reported instead of crashing.
func kindOf[T core.Args]() (name string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %s: Kind() on the zero value panicked: %v", ErrInvalidKind, typeName[T](), v)
		}
	}()
	var zero T
	return zero.Kind(), nil
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// emptyObjectIsZero reports whether decoding the JSON object {} into a
// zero T leaves the zero T and no error, so that a job whose payload is
// {} (args without fields, or with every field omitted) need not be
// decoded: T is a struct that decodes itself neither from JSON nor from
// text (json.Unmarshal would call the one and refuse an object for the
// other).
func emptyObjectIsZero[T any]() bool {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return false
	}
	for _, u := range []reflect.Type{reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()} {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return false
		}
	}
	return true
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
