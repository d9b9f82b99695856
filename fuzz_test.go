package docket_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/jsonbig"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5"
)

// fuzzArgs carries a fuzzed kind, payload text and JSON value.
type fuzzArgs struct {
	kind string
	Note string          `json:"note"`
	Raw  json.RawMessage `json:"raw,omitempty"`
}

func (a fuzzArgs) Kind() string { return a.kind }

// payloadMarker starts every fuzzed payload, so that an error quoting the
// payload is seen.
const payloadMarker = "PAYLOAD-7f3a9c-"

// FuzzValidate checks enqueue validation of names, keys, numbers and
// payloads: it never panics, accepts exactly what Opts documents and what
// PostgreSQL's jsonb stores (asked of the test database), rejects the rest
// with ErrInvalidJob, and never quotes the payload in its error. What it
// accepts is really enqueued, by Enqueue and by EnqueueMany's set-based
// insert, in a transaction then rolled back: PostgreSQL must take it.
func FuzzValidate(f *testing.F) {
	f.Add("email", "", "", "", "", "hello", 0, 0, "", "", []byte(nil))
	f.Add("email", "mail", "tenant-1", "order:42", "customer:7", "x", 5, 3, "k", "v", []byte(`{"n":[1,2.5,-3e2]}`))
	f.Add("", "q", "", "", "", "", 0, 0, "", "", []byte(nil))
	f.Add("kind with space", "q", "", "", "", "", 0, 0, "", "", []byte(nil))
	f.Add("k", "q\x7f", "", "", "", "", 0, 0, "", "", []byte(nil))
	f.Add("k", "q", "t", "bad\x00key", "", "", 0, 0, "", "", []byte(nil))
	f.Add("k", "q", "t", "", "\xff\xfe", "", 0, 0, "", "", []byte(nil))
	f.Add("k", "q", "t", strings.Repeat("u", docket.MaxKeyLen+1), "", "", 0, 0, "", "", []byte(nil))
	f.Add(strings.Repeat("k", docket.MaxNameLen+1), "", "", "", "", "", 0, 0, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "nul \x00 in payload", 0, 0, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "bad utf8 \xc3", 0, 0, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "", 101, -1, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "", 0, math.MaxInt32+1, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "", 0, 0, "m\x00", "v", []byte(nil))
	f.Add("k", "", "", "", "", "", 0, 0, "m", "v\xff", []byte(nil))
	f.Add("k", "", "", "", "", "", 0, 0, "m", strings.Repeat("v", docket.MaxKeyLen+1), []byte(nil))
	f.Add("名前", "キュー", "", "ключ", "", "", 0, 0, "", "", []byte(nil))
	// Numbers at the edges of numeric's range, and escapes jsonb refuses.
	for _, raw := range []string{"1e131071", "1e131072", "1e-16383", "1e-16384", "0e-16384", "1.00e-16382",
		"0e1073741822", "0e1073741823", "-9.9999e131071", `"\u0000"`, `"\ud800"`, `["\ud83d\ude00",1.50]`, "not json"} {
		f.Add("k", "", "", "", "", "", 0, 0, "", "", []byte(raw))
	}
	b := setup(f)
	ctx, pool := b.Ctx, b.Pool
	f.Fuzz(func(t *testing.T, kind, queue, tenant, unique, serial, note string, priority, maxAttempts int, metaKey, metaVal string, raw []byte) {
		args := fuzzArgs{kind: kind, Note: payloadMarker + note, Raw: raw}
		opts := docket.Opts{Queue: queue, Tenant: tenant, UniqueKey: unique, SerialKey: serial, Priority: priority, MaxAttempts: maxAttempts}
		if metaKey != "" || metaVal != "" {
			opts.Meta = map[string]string{metaKey: metaVal}
		}
		err := docket.Validate(args, opts)
		want := nameOK(kind, false) && nameOK(queue, true) && nameOK(tenant, true) &&
			keyOK(unique) && keyOK(serial) && textOK(metaKey) && textOK(metaVal) &&
			priority >= docket.MinPriority && priority <= docket.MaxPriority &&
			maxAttempts >= 0 && maxAttempts <= math.MaxInt32 &&
			!strings.Contains(note, "\x00")
		if want && len(raw) > 0 {
			// The oracle for the JSON value is PostgreSQL itself.
			want = json.Valid(raw) && utf8.Valid(raw)
			if want {
				_, _, code := jsonbig.Measure(t, pool, raw)
				want = code == ""
			}
		}
		if want && err != nil {
			t.Fatalf("valid job rejected: %v", err)
		}
		if !want && err == nil {
			t.Fatalf("invalid job accepted: kind %q queue %q tenant %q unique %q serial %q priority %d attempts %d meta %q=%q note %q raw %q",
				kind, queue, tenant, unique, serial, priority, maxAttempts, metaKey, metaVal, note, raw)
		}
		if err == nil {
			enqueueRolledBack(t, ctx, b.client, pool, args, opts)
			return
		}
		if !errors.Is(err, docket.ErrInvalidJob) {
			t.Fatalf("error %v does not wrap ErrInvalidJob", err)
		}
		quoted := strings.Contains(kind+queue+tenant+unique+serial+metaKey+metaVal, payloadMarker)
		if !quoted && strings.Contains(err.Error(), payloadMarker) {
			t.Fatalf("error quotes the payload: %v", err)
		}
	})
}

// enqueueRolledBack enqueues args with opts by Enqueue and by EnqueueMany's
// set-based insert (a delayed job, without the unique key Enqueue took) in
// one transaction, rolled back at the end, and fails if PostgreSQL refuses
// either.
func enqueueRolledBack(t *testing.T, ctx context.Context, client *docket.Client, db migrate.Beginner, args fuzzArgs, opts docket.Opts) {
	t.Helper()
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := client.Enqueue(ctx, tx, args, opts); err != nil {
			return err
		}
		opts.UniqueKey, opts.Delay = "", time.Hour
		if _, err := client.EnqueueMany(ctx, tx, []docket.Item{{Args: args, Opts: opts}}); err != nil {
			return err
		}
		return errRollBack
	})
	if !errors.Is(err, errRollBack) {
		t.Fatalf("PostgreSQL refused a job validation accepted: %v", err)
	}
}

var errRollBack = errors.New("roll back")

// nameOK is Opts' rule for queue, kind and tenant names.
func nameOK(v string, emptyOK bool) bool {
	if v == "" {
		return emptyOK
	}
	return len(v) <= docket.MaxNameLen && utf8.ValidString(v) &&
		!strings.ContainsFunc(v, func(r rune) bool { return r < 0x21 || r == 0x7f })
}

// keyOK is Opts' rule for unique and serial keys.
func keyOK(v string) bool { return len(v) <= docket.MaxKeyLen && textOK(v) }

// textOK is Opts' rule for meta: text PostgreSQL can store.
func textOK(v string) bool { return utf8.ValidString(v) && !strings.Contains(v, "\x00") }
