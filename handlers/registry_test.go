package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/jackc/pgx/v5"
)

type testArgs struct {
	N int `json:"n"`
}

func (testArgs) Kind() string { return "test" }

type otherArgs struct{}

func (otherArgs) Kind() string { return "other" }

type tenantArgs struct{}

func (tenantArgs) Kind() string { return "tenant" }

type badKindArgs struct{}

func (badKindArgs) Kind() string { return "has space" }

type ptrArgs struct{ name string }

func (p *ptrArgs) Kind() string { return p.name } // panics on a nil *ptrArgs

func TestRegistry(t *testing.T) {
	t.Parallel()
	nop := func(context.Context, *Job[testArgs]) error { return nil }
	r := NewRegistry()
	if err := Register(r, nop, KindOpts{Queue: "mail", MaxAttempts: 3, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := Register(r, nop, KindOpts{}); !errors.Is(err, ErrDuplicateKind) || !strings.Contains(err.Error(), "test") {
		t.Errorf("second registration: %v, want ErrDuplicateKind naming the kind", err)
	}
	if err := RegisterTx(r, func(context.Context, pgx.Tx, *Job[testArgs]) error { return nil }, KindOpts{}); !errors.Is(err, ErrDuplicateKind) {
		t.Errorf("tx registration of a taken kind: %v", err)
	}
	MustRegisterTx(r, func(context.Context, pgx.Tx, *Job[otherArgs]) error { return nil }, KindOpts{})
	if got := r.Kinds(); !slices.Equal(got, []string{"other", "test"}) {
		t.Errorf("Kinds() = %v", got)
	}
	for name, err := range map[string]error{
		"nil handler":      Register[tenantArgs](r, nil, KindOpts{}),
		"nil tx handler":   RegisterTx[tenantArgs](r, nil, KindOpts{}),
		"bad kind":         Register(r, func(context.Context, *Job[badKindArgs]) error { return nil }, KindOpts{}),
		"bad queue":        Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Queue: "a b"}),
		"neg attempts":     Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{MaxAttempts: -1}),
		"neg timeout":      Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Timeout: -time.Second}),
		"priority 11":      Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Priority: 11}),
		"Kind() panics":    Register(r, func(context.Context, *Job[*ptrArgs]) error { return nil }, KindOpts{}),
		"long queue name":  Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Queue: strings.Repeat("q", 129)}),
		"control in queue": Register(r, func(context.Context, *Job[tenantArgs]) error { return nil }, KindOpts{Queue: "q\n"}),
	} {
		if !errors.Is(err, ErrInvalidKind) {
			t.Errorf("%s: %v, want ErrInvalidKind", name, err)
		}
	}
	if got := r.Kinds(); len(got) != 2 {
		t.Errorf("failed registrations were kept: %v", got)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustRegister of a taken kind did not panic")
			}
		}()
		MustRegister(r, nop, KindOpts{})
	}()
}

func TestErrorsAreDistinctTypes(t *testing.T) {
	t.Parallel()
	base := errors.New("upstream said no")
	var se *SnoozeError
	var re *RetryAfterError
	var ce *CancelError
	if err := Snooze(time.Second); !errors.As(err, &se) || se.Delay != time.Second || errors.As(err, &ce) {
		t.Errorf("Snooze: %v", err)
	}
	wrapped := errors.Join(errors.New("context"), RetryAfter(time.Minute, base))
	if !errors.As(wrapped, &re) || re.Delay != time.Minute || !errors.Is(wrapped, base) {
		t.Errorf("RetryAfter wrapped: %v", wrapped)
	}
	if err := Cancel(base); !errors.As(err, &ce) || !errors.Is(err, base) || errors.As(err, &re) {
		t.Errorf("Cancel: %v", err)
	}
	if Cancel(nil).Error() == "" || RetryAfter(0, nil).Error() == "" {
		t.Error("nil errors give empty messages")
	}
}

type selfDecoding struct{ seen bool }

func (selfDecoding) Kind() string { return "self-decoding" }

func (s *selfDecoding) UnmarshalJSON([]byte) error { s.seen = true; return nil }

type textDecoding struct{}

func (textDecoding) Kind() string { return "text-decoding" }

func (*textDecoding) UnmarshalText([]byte) error { return nil }

type mapArgs map[string]int

func (mapArgs) Kind() string { return "map-args" }

// A payload of {} reaches the handler as json.Unmarshal would decode it,
// also for the args types that the registry does not decode {} for.
func TestEmptyPayloadDecodes(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	var got []string
	MustRegister(r, func(_ context.Context, j *Job[testArgs]) error {
		got = append(got, "test "+strconv.Itoa(j.Args.N))
		return nil
	}, KindOpts{})
	MustRegister(r, func(_ context.Context, j *Job[selfDecoding]) error {
		got = append(got, "self-decoding "+strconv.FormatBool(j.Args.seen))
		return nil
	}, KindOpts{})
	MustRegister(r, func(_ context.Context, j *Job[textDecoding]) error {
		got = append(got, "text-decoding ran")
		return nil
	}, KindOpts{})
	MustRegister(r, func(_ context.Context, j *Job[mapArgs]) error {
		got = append(got, "map-args nil "+strconv.FormatBool(j.Args == nil))
		return nil
	}, KindOpts{})
	for _, kind := range []string{"test", "self-decoding", "text-decoding", "map-args"} {
		err := r.Handle(context.Background(), nil, &core.Job{ID: 1, Kind: kind, Payload: json.RawMessage(`{}`)})
		var de *DecodeError
		if kind == "text-decoding" {
			if !errors.As(err, &de) {
				t.Errorf("%s: %v, want a DecodeError (json.Unmarshal refuses an object for a TextUnmarshaler)", kind, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
	if want := []string{"test 0", "self-decoding true", "map-args nil false"}; !slices.Equal(got, want) {
		t.Errorf("handlers saw %q, want %q", got, want)
	}
}
