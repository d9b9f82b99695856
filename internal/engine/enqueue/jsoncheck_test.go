package enqueue

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docketq/docket/internal/testkit/jsonbig"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestCheckJSONBEscapes(t *testing.T) {
	t.Parallel()
	// want is a word of the description, or "" for text jsonb stores.
	cases := []struct{ json, want string }{
		{`""`, ""},
		{`{"a":[1,true,null,"x"]}`, ""},
		{`"\n\t\"\/\b\f\r"`, ""},
		{`"\u0001\u001f\u20AC\uffff"`, ""},

		// NUL, and text that only looks like one.
		{`"\u0000"`, "NUL"},
		{`"a\u0000b"`, "NUL"},
		{`{"\u0000":1}`, "NUL"},
		{`"\u00000"`, "NUL"},
		{`"C:\\u0000dir"`, ""},      // escaped backslash, then the letters u0000
		{`"\\\u0000"`, "NUL"},       // escaped backslash, then an escaped NUL
		{`"\\\\u0000"`, ""},         // two escaped backslashes, then letters
		{`"\\\\\u0000"`, "NUL"},     // two escaped backslashes, then a NUL
		{`"\"\u0000"`, "NUL"},       // escaped quote does not end the string
		{`["\\", "u0000"]`, ""},     // a backslash at the end of a string
		{`"\\u0000\u0041"`, ""},     // letters u0000, then an escaped A
		{`"x\\\\\\u0000x"`, ""},     // three escaped backslashes, then letters
		{`"\/u0000"`, ""},           // escaped slash, then letters
		{`{"k\\":"\u0000"}`, "NUL"}, // in a value after a key ending in a backslash
		{`{"k\\u0000":"v"}`, ""},    // letters in a key
		{`"\u0000\ud800"`, "NUL"},   // the first problem is reported
		{`"\ud800\u0000"`, "surrogate"},

		// Surrogates: pairs are one character, a half alone is not.
		{`"\ud83d\ude00"`, ""},
		{`"\uD83D\uDE00"`, ""},
		{`"\uDBFF\uDFFF\uD800\uDC00"`, ""},
		{`"\ud800"`, "surrogate"},
		{`"\udbff"`, "surrogate"},
		{`"\udc00"`, "surrogate"},
		{`"\udfff"`, "surrogate"},
		{`"\ude00\ud83d"`, "surrogate"},       // low before high
		{`"\ud83d\u0041"`, "surrogate"},       // high, then not a low
		{`"\ud83d\ud83d\ude00"`, "surrogate"}, // high, then a pair
		{`"\ud83dx\ude00"`, "surrogate"},      // a character between
		{`"\ud83d\\ude00"`, "surrogate"},      // high, then an escaped backslash
		{`["\ud83d","\ude00"]`, "surrogate"},  // halves in two strings
		{`"\ud83d"`, "surrogate"},             // high at the end of the string
		{`"\ud83d\ude00\ude00"`, "surrogate"}, // a pair, then a low
		{`"\\ud800"`, ""},                     // letters, not an escape
		{`"\u00e9\ud83d\ude00\u00e9"`, ""},

		// Cut short or malformed (json.Marshal never returns these).
		{`\`, "valid JSON"},
		{`"\`, "valid JSON"},
		{`"\u`, "malformed"},
		{`"\u000`, "malformed"},
		{`"\u000"`, "malformed"},
		{`"\u00g0"`, "malformed"},
		{`"\u+123"`, "malformed"},
		{`"\x"`, "malformed"},
		{`"\ud83d"`, "surrogate"}, // high at the end of the string
		{`"\ud83d\u"`, "surrogate"},
		{`"\ud83d\ude0"`, "surrogate"},
	}
	for _, c := range cases {
		b := []byte(c.json)
		keep := bytes.Clone(b)
		_, got := checkJSONB(b)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("checkJSONB(%s) = %q, want %q", c.json, got, c.want)
		}
		if !bytes.Equal(b, keep) {
			t.Errorf("checkJSONB(%s) modified its input", c.json)
		}
	}
}

// numbers are JSON numbers at and around the edges of numeric's range, with
// whether PostgreSQL's jsonb stores them (found with psql on PostgreSQL 15).
var numbers = []struct {
	n  string
	ok bool
}{
	{"0", true}, {"-0", true}, {"0.0", true}, {"-0.0", true}, {"1", true}, {"-1", true},
	{"1.50", true}, {"100e-2", true}, {"1E+5", true}, {"1e-5", true}, {"0.000001", true},
	{"123456789.123456789", true}, {"12345678901234567890", true}, {"99999.99990000", true},
	{"1e-63", true}, {"1e-64", true}, {"1e252", true}, {"1e253", true}, {"1e255", true},
	{"1e256", true}, {"1e-256", true}, {"1e-257", true}, {"1e-260", true},

	// The largest powers of ten and digit counts numeric holds.
	{"1e131071", true}, {"9.9999e131071", true}, {"0.1e131072", true}, {"-1e131071", true},
	{"1e+0000000000000000000000131071", true},
	{strings.Repeat("9", 131072), true},
	{"1" + strings.Repeat("0", 131072) + "e-1", true},
	{"1" + strings.Repeat("0", 131071) + ".5", true},
	{"1e131072", false}, {"10e131071", false}, {"-1e131072", false},
	{strings.Repeat("9", 131073), false},

	// The smallest, and the digits after the point, trailing zeros
	// included.
	{"1e-16383", true}, {"0e-16383", true}, {"1.0e-16382", true},
	{"0." + strings.Repeat("0", 16382) + "1", true},
	{"1." + strings.Repeat("0", 16383), true},
	{"1e-16384", false}, {"1.5e-16383", false}, {"15e-16384", false}, {"0e-16384", false},
	{"1.00e-16382", false},
	{"0." + strings.Repeat("0", 16383) + "1", false},
	{"1." + strings.Repeat("0", 16384), false},

	// The exponent itself, even of zero.
	{"0e1073741822", true}, {"0e1073741823", false}, {"0e-1073741822", false},
	{"1e1073741823", false}, {"1e99999999999999999999999", false},
	{"1e-99999999999999999999999", false}, {"0e99999999999999999999999", false},
}

func TestCheckJSONBNumbers(t *testing.T) {
	t.Parallel()
	for _, c := range numbers {
		for _, doc := range []string{c.n, "[" + c.n + "]", `{"n":` + c.n + `}`} {
			_, problem := checkJSONB([]byte(doc))
			if c.ok && problem != "" {
				t.Errorf("checkJSONB(%.40s) = %q, want it stored", doc, problem)
			}
			if !c.ok && !strings.Contains(problem, "numeric's range") {
				t.Errorf("checkJSONB(%.40s) = %q, want it refused as out of numeric's range", doc, problem)
			}
		}
	}
}

// checkJSONB's verdict is PostgreSQL's, and its sizes are PostgreSQL's:
// exact for scalars and arrays, an upper bound inside objects.
func TestCheckJSONBAgreesWithPostgres(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	type doc struct {
		json  string
		bound bool // sizes may be above PostgreSQL's, not below
	}
	docs := []doc{
		{`""`, false}, {`"abc"`, false}, {`"é😀 <>&/"`, false}, {`"\u2028\u0022\u005c"`, false},
		{`"\u00e9\ud83d\ude00\n\u0001\"\\\/\b\f\r\t\u001F"`, false},
		{`true`, false}, {`null`, false}, {`[]`, false}, {`{}`, true}, {`[[]]`, false},
		{`[1,"a",[2.5,[true,false,null]],-3]`, false}, {`["x",1]`, false},
		{`["xyz",1,"ab",[1],2,"",[],1e-70,"q",1e70]`, false},
		{`[1e3,1.5e-3,"\u0001",0.000]`, false},
		{`{"b":1,"a":[1,2],"c":{"d":"e"}}`, true}, {`{"a":1,"a":2}`, true},
		{`[{"k":[1,{"z":null}]},"x",{"":""}]`, true},
		{strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth), false},
		{`"\u0000"`, false}, {`"\ud800"`, false}, {`"\udc00x"`, false}, {`"a\\\u0000"`, false},
		{`["\ud83d","\ude00"]`, false},
	}
	for _, c := range numbers {
		// "-0" comes back as "0": one byte less than counted.
		negZero := strings.HasPrefix(c.n, "-0") && !strings.ContainsAny(c.n, "123456789")
		docs = append(docs, doc{c.n, negZero}, doc{`[` + c.n + `,"x",` + c.n + `]`, negZero}, doc{`{"n":` + c.n + `}`, true})
	}
	for _, d := range docs {
		size, problem := checkJSONB([]byte(d.json))
		stored, rendered, code := jsonbig.Measure(t, pool, []byte(d.json))
		switch {
		case problem == "" && code != "":
			t.Errorf("%.60s: accepted, but PostgreSQL refuses it with SQLSTATE %s", d.json, code)
		case problem != "" && code == "":
			t.Errorf("%.60s: refused (%s), but PostgreSQL stores it", d.json, problem)
		case problem != "":
		case d.bound && (size.stored < stored || size.rendered < rendered):
			t.Errorf("%.60s: sizes %d and %d, below PostgreSQL's %d and %d", d.json, size.stored, size.rendered, stored, rendered)
		case !d.bound && (size.stored != stored || size.rendered != rendered):
			t.Errorf("%.60s: sizes %d and %d, PostgreSQL's %d and %d", d.json, size.stored, size.rendered, stored, rendered)
		}
	}
}

// The limits other than numbers, each at its edge and one past it. Beyond
// depth 10,000 PostgreSQL still parses a few thousand levels: that limit
// is Docket's (see maxJSONDepth). The others are PostgreSQL's, found with
// psql: past them it refuses the document (54000 or XX000).
func TestCheckJSONBLimits(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("a"), 268435450) // a string of 268,435,448 bytes, quoted
	big[0], big[len(big)-1] = '"', '"'
	over := jsonbig.Over()
	cases := []struct {
		name   string
		ok     func() []byte
		over   func() []byte
		reason string
	}{
		{"nesting", func() []byte { return []byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000)) },
			func() []byte { return []byte(strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001)) }, "deep"},
		{"array elements", func() []byte { return jsonbig.Repeat("[", "0", 1<<24, "]") },
			func() []byte { return jsonbig.Repeat("[", "0", 1<<24+1, "]") }, "16777216 elements"},
		{"object members", func() []byte { return jsonbig.Repeat("{", `"":0`, 1<<23, "}") },
			func() []byte { return jsonbig.Repeat("{", `"":0`, 1<<23+1, "}") }, "8388608 members"},
		// A scalar is an array of one: 8 bytes of header and entry.
		{"jsonb size, a string", func() []byte { return big[1:] },
			func() []byte { return big }, "268435456 bytes in jsonb"},
		{"jsonb size, arrays", func() []byte { return append(bytes.Clone(over[:len(over)-4]), "]]"...) },
			func() []byte { return over }, "268435458 bytes in jsonb"},
	}
	for _, c := range cases {
		if _, p := checkJSONB(c.over()); !strings.Contains(p, c.reason) {
			t.Errorf("%s: one past the limit: %q, want it refused saying %q", c.name, p, c.reason)
		}
		ok := c.ok()
		if ok[0] == 'a' {
			ok[0] = '"'
		}
		if _, p := checkJSONB(ok); p != "" {
			t.Errorf("%s: at the limit: %q, want it stored", c.name, p)
		}
	}
}

// FuzzCheckJSONB checks checkJSONB against PostgreSQL: no input makes it
// panic or loop; a JSON text it accepts is one jsonb stores, in no more
// bytes than it counted, and writes back as no more text (the same counts
// without objects or a negative zero); one it refuses, jsonb refuses too.
func FuzzCheckJSONB(f *testing.F) {
	for _, s := range []string{`"\u0000"`, `"C:\\u0000dir"`, `"\ud83d\ude00"`, `"\ud83d"`, `\`, `"\u12`,
		`[1,"a",[2.5,[true,false,null]],-3]`, `{"b":1,"a":[1,2],"a":{"d":"e"}}`, `["xyz",1,"ab",[1],2,"",[],1e-70]`,
		`"\u00e9\n\u0001\"\\\/\b\f\r\t"`, ` [ 1 , 2 ] `, `[1 2]`, `{"a"}`, `tru`, `-`, `01`, `1.`, `.5`} {
		f.Add([]byte(s))
	}
	for _, c := range numbers {
		if len(c.n) < 100 {
			f.Add([]byte(c.n))
		}
	}
	pool := pgtest.Pool(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		size, problem := checkJSONB(b)
		if !json.Valid(b) || !utf8.Valid(b) {
			return // enqueue never passes such text
		}
		stored, rendered, code := jsonbig.Measure(t, pool, b)
		switch {
		case problem == "" && code != "":
			t.Fatalf("checkJSONB(%q) accepted it, but PostgreSQL refuses it with SQLSTATE %s", b, code)
		case problem != "" && code == "":
			t.Fatalf("checkJSONB(%q) = %q, but PostgreSQL stores it", b, problem)
		case problem != "":
		case size.stored < stored || size.rendered < rendered:
			t.Fatalf("checkJSONB(%q) counted %d bytes in jsonb and %d of text; PostgreSQL has %d and %d", b, size.stored, size.rendered, stored, rendered)
		case !bytes.Contains(b, []byte("{")) && !bytes.Contains(b, []byte("-0")) && (size.stored != stored || size.rendered != rendered):
			t.Fatalf("checkJSONB(%q) counted %d bytes in jsonb and %d of text; PostgreSQL has exactly %d and %d", b, size.stored, size.rendered, stored, rendered)
		}
	})
}
