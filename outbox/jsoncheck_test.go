package outbox

import (
	"bytes"
	"strings"
	"testing"
)

func TestBadJSONEscape(t *testing.T) {
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
		{`\`, "truncated"},
		{`"\`, "truncated"},
		{`"\u`, "malformed"},
		{`"\u000`, "malformed"},
		{`"\u000"`, "malformed"},
		{`"\u00g0"`, "malformed"},
		{`"\u+123"`, "malformed"},
		{`"\ud83d`, "surrogate"}, // high at the end of the input
		{`"\ud83d\u`, "surrogate"},
		{`"\ud83d\ude0`, "surrogate"},
	}
	for _, c := range cases {
		b := []byte(c.json)
		keep := bytes.Clone(b)
		got := badJSONEscape(b)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("badJSONEscape(%s) = %q, want %q", c.json, got, c.want)
		}
		if !bytes.Equal(b, keep) {
			t.Errorf("badJSONEscape(%s) modified its input", c.json)
		}
	}
}

// FuzzBadJSONEscape checks that no input makes the scanner panic or loop,
// and that text without backslashes is always accepted.
func FuzzBadJSONEscape(f *testing.F) {
	for _, s := range []string{`"\u0000"`, `"C:\\u0000dir"`, `"\ud83d\ude00"`, `"\ud83d`, `\`, `"\u12`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := badJSONEscape(b)
		if !bytes.Contains(b, []byte(`\`)) && got != "" {
			t.Fatalf("badJSONEscape(%q) = %q without any escape", b, got)
		}
	})
}
