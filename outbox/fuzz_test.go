package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/docketq/docket/internal/testkit/pgtest"
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
	f.Add("k", "q", "t", strings.Repeat("u", MaxKeyLen+1), "", "", 0, 0, "", "", []byte(nil))
	f.Add(strings.Repeat("k", MaxNameLen+1), "", "", "", "", "", 0, 0, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "nul \x00 in payload", 0, 0, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "bad utf8 \xc3", 0, 0, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "", 101, -1, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "", 0, math.MaxInt32+1, "", "", []byte(nil))
	f.Add("k", "", "", "", "", "", 0, 0, "m\x00", "v", []byte(nil))
	f.Add("k", "", "", "", "", "", 0, 0, "m", "v\xff", []byte(nil))
	f.Add("k", "", "", "", "", "", 0, 0, "m", strings.Repeat("v", MaxKeyLen+1), []byte(nil))
	f.Add("名前", "キュー", "", "ключ", "", "", 0, 0, "", "", []byte(nil))
	// Numbers at the edges of numeric's range, and escapes jsonb refuses.
	for _, raw := range []string{"1e131071", "1e131072", "1e-16383", "1e-16384", "0e-16384", "1.00e-16382",
		"0e1073741822", "0e1073741823", "-9.9999e131071", `"\u0000"`, `"\ud800"`, `["\ud83d\ude00",1.50]`, "not json"} {
		f.Add("k", "", "", "", "", "", 0, 0, "", "", []byte(raw))
	}
	ctx := context.Background()
	pool := pgtest.Pool(f)
	client, _ := MigratedClient(f, ctx, pool, Config{})
	f.Fuzz(func(t *testing.T, kind, queue, tenant, unique, serial, note string, priority, maxAttempts int, metaKey, metaVal string, raw []byte) {
		args := fuzzArgs{kind: kind, Note: payloadMarker + note, Raw: raw}
		opts := Opts{Queue: queue, Tenant: tenant, UniqueKey: unique, SerialKey: serial, Priority: priority, MaxAttempts: maxAttempts}
		if metaKey != "" || metaVal != "" {
			opts.Meta = map[string]string{metaKey: metaVal}
		}
		err := Validate(args, opts)
		want := nameOK(kind, false) && nameOK(queue, true) && nameOK(tenant, true) &&
			keyOK(unique) && keyOK(serial) && textOK(metaKey) && textOK(metaVal) &&
			priority >= MinPriority && priority <= MaxPriority &&
			maxAttempts >= 0 && maxAttempts <= math.MaxInt32 &&
			!strings.Contains(note, "\x00")
		if want && len(raw) > 0 {
			// The oracle for the JSON value is PostgreSQL itself.
			want = json.Valid(raw) && utf8.Valid(raw)
			if want {
				_, _, code := pgJSONB(t, pool, raw)
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
			enqueueRolledBack(t, ctx, client, pool, args, opts)
			return
		}
		if !errors.Is(err, ErrInvalidJob) {
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
func enqueueRolledBack(t *testing.T, ctx context.Context, client *Client, db TxBeginner, args fuzzArgs, opts Opts) {
	t.Helper()
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := client.Enqueue(ctx, tx, args, opts); err != nil {
			return err
		}
		opts.UniqueKey, opts.Delay = "", time.Hour
		if _, err := client.EnqueueMany(ctx, tx, []Item{{Args: args, Opts: opts}}); err != nil {
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
	return len(v) <= MaxNameLen && utf8.ValidString(v) &&
		!strings.ContainsFunc(v, func(r rune) bool { return r < 0x21 || r == 0x7f })
}

// keyOK is Opts' rule for unique and serial keys.
func keyOK(v string) bool { return len(v) <= MaxKeyLen && textOK(v) }

// textOK is Opts' rule for meta: text PostgreSQL can store.
func textOK(v string) bool { return utf8.ValidString(v) && !strings.Contains(v, "\x00") }

// FuzzKeyPart checks that an event key's relay partition is stable and in
// [0, EventParts).
func FuzzKeyPart(f *testing.F) {
	for _, k := range []string{"", "order:42", "order:43", "\xff", strings.Repeat("k", MaxKeyLen)} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		p := keyPart(key)
		if p < 0 || p >= EventParts {
			t.Fatalf("keyPart(%q) = %d, outside [0, %d)", key, p, EventParts)
		}
		if p != keyPart(key) {
			t.Fatalf("keyPart(%q) is not stable", key)
		}
	})
}

// FuzzGrantSQL checks that a role name reaches the grant script only as a
// quoted identifier: read as PostgreSQL would, the script is the template
// with each placeholder replaced by one identifier that is the schema or
// the role, so no role can add or end a statement.
func FuzzGrantSQL(f *testing.F) {
	for _, r := range []string{"app", "App Role", `x"; DROP SCHEMA public CASCADE; --`, `"`, `""`, "{{role}}", "{{schema}}",
		"a;b", "--", "/*", "$$", "'", "\xff", "a\x00b", "", strings.Repeat("r", 63), strings.Repeat("r", 64)} {
		f.Add(r)
	}
	m, err := NewMigrator("shop")
	if err != nil {
		f.Fatal(err)
	}
	shape := strings.NewReplacer("{{schema}}", "\x01", "{{role}}", "\x01").Replace(grantSQL)
	f.Fuzz(func(t *testing.T, role string) {
		sql, err := m.GrantSQL(role)
		if err != nil {
			if !errors.Is(err, ErrInvalidRole) {
				t.Fatalf("GrantSQL(%q) error %v does not wrap ErrInvalidRole", role, err)
			}
			if role != "" && len(role) <= 63 && !strings.Contains(role, "\x00") {
				t.Fatalf("GrantSQL(%q) refused a valid role: %v", role, err)
			}
			return
		}
		var out strings.Builder
		for rest := sql; rest != ""; {
			i := strings.IndexByte(rest, '"')
			if i < 0 {
				out.WriteString(rest)
				break
			}
			out.WriteString(rest[:i])
			id, after, ok := readIdent(rest[i:])
			if !ok {
				t.Fatalf("role %q: unterminated identifier in\n%s", role, sql)
			}
			if id != "shop" && id != role {
				t.Fatalf("role %q: identifier %q is neither schema nor role in\n%s", role, id, sql)
			}
			out.WriteByte('\x01')
			rest = after
		}
		if out.String() != shape {
			t.Fatalf("role %q changed the script's shape:\n%s", role, sql)
		}
	})
}

// readIdent reads the double-quoted identifier at the start of s as
// PostgreSQL does ("" stands for one quote) and returns it and what follows.
func readIdent(s string) (id, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] != '"':
			b.WriteByte(s[i])
		case i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		default:
			return b.String(), s[i+1:], true
		}
	}
	return "", s, false
}
