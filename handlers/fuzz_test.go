package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
)

// decodeArgs has a field of every JSON shape a typed handler's args use.
type decodeArgs struct {
	Small  int8           `json:"small"`
	Count  uint32         `json:"count"`
	Name   string         `json:"name"`
	Ratio  float64        `json:"ratio"`
	OK     bool           `json:"ok"`
	Tags   []string       `json:"tags"`
	Attrs  map[string]int `json:"attrs"`
	Nested *decodeNested  `json:"nested"`
	Any    any            `json:"any"`
}

type decodeNested struct {
	At  time.Time       `json:"at"`
	Raw json.RawMessage `json:"raw"`
	IDs [2]int16        `json:"ids"`
}

func (decodeArgs) Kind() string { return "fuzz_decode" }

// The shapes of a DecodeError's Detail: an offset, a field path made of the
// args type's JSON names with JSON and Go type names, or an error's type.
// None has room for payload text.
var (
	detailOffset = regexp.MustCompile(`^invalid JSON at offset \d+$`)
	detailField  = regexp.MustCompile(`^field ([a-z.]+|\(top level\)): JSON (string|number|bool|array|object) cannot go into Go [\w.\[\]*]+$`)
	detailType   = regexp.MustCompile(`^decoding failed \([\w.*]+\)$`)
	argsFields   = map[string]bool{"small": true, "count": true, "name": true, "ratio": true, "ok": true, "tags": true,
		"attrs": true, "nested": true, "any": true, "at": true, "raw": true, "ids": true}
)

// FuzzDecodeArgs feeds payloads to a typed handler the way the worker
// does. Decoding never panics; a payload either reaches the handler, and
// then re-encoding its args and decoding again gives the same args, or is
// refused with a DecodeError whose detail cannot quote the payload.
func FuzzDecodeArgs(f *testing.F) {
	for _, p := range []string{
		`{}`, `null`, ``, ` `, `[]`, `"x"`, `{"small": 127}`, `{"small": 128}`, `{"count": -1}`,
		`{"name": "\u0000\ud800"}`, `{"ratio": 1e400}`, `{"tags": ["a", 1]}`, `{"attrs": {"k": "v"}}`,
		`{"nested": {"at": "2026-03-29T02:30:00+02:00", "raw": {"a": [1, 2]}, "ids": [1, 2, 3]}}`,
		`{"nested": {"at": "not a time"}}`, `{"nested": {"at": "10000-01-01T00:00:00Z"}}`,
		`{"any": {"deep": [[[[{}]]]]}}`, `{"name": "x"} trailing`, `{"name": "abc`, `{"NAME": "case"}`,
		`{"nested": {"ids": [40000]}}`, `{"ok": "true"}`, "\xff",
	} {
		f.Add([]byte(p))
	}
	r := NewRegistry()
	var got decodeArgs
	MustRegister(r, func(_ context.Context, j *Job[decodeArgs]) error {
		got = j.Args
		return nil
	}, KindOpts{})
	k := r.lookup(decodeArgs{}.Kind())
	decode := func(payload []byte) (decodeArgs, error) {
		got = decodeArgs{}
		err := k.run(context.Background(), nil, &core.Job{Kind: k.name, Payload: payload})
		return got, err
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		args, err := decode(payload)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("payload %q: %T %v, want a *DecodeError", payload, err, err)
			}
			if de.Kind != "fuzz_decode" || de.Type != "handlers.decodeArgs" {
				t.Fatalf("DecodeError names kind %q type %q", de.Kind, de.Type)
			}
			switch d := de.Detail; {
			case detailOffset.MatchString(d), detailType.MatchString(d):
			case detailField.MatchString(d):
				path := detailField.FindStringSubmatch(d)[1]
				for _, name := range strings.Split(path, ".") {
					if path != "(top level)" && !argsFields[name] {
						t.Fatalf("detail %q names %q, not a field of the args", d, name)
					}
				}
			default:
				t.Fatalf("payload %q: detail %q has an unexpected shape", payload, d)
			}
			return
		}
		once, err := json.Marshal(args)
		if err != nil {
			t.Fatalf("payload %q decoded to args that do not encode: %v", payload, err)
		}
		again, err := decode(once)
		if err != nil {
			t.Fatalf("re-encoded args %s do not decode: %v", once, err)
		}
		twice, err := json.Marshal(again)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("args do not round-trip: %s, then %s (%v)", once, twice, err)
		}
	})
}
