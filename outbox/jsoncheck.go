package outbox

import "bytes"

// badJSONEscape returns what, among the \u escapes of the JSON text b,
// PostgreSQL's jsonb cannot store, or "" when there is nothing:
//
//   - an escaped NUL (\u0000), which jsonb has no way to hold;
//   - a lone UTF-16 surrogate: a high surrogate (\uD800–\uDBFF) not followed
//     at once by an escaped low one (\uDC00–\uDFFF), or a low one without a
//     high one just before it, which jsonb rejects as invalid input;
//   - a \u escape cut short or without four hex digits.
//
// It reads b once, escape by escape, so the text C:\\u0000dir (an escaped
// backslash, then the letters u0000) is not taken for a NUL, while
// \\\u0000 (an escaped backslash, then an escaped NUL) is. Valid JSON has
// backslashes only inside strings, so b must be valid JSON, as json.Marshal
// returns it; b is not modified.
func badJSONEscape(b []byte) string {
	// hex4 decodes the four hex digits at b[i:], or returns -1.
	hex4 := func(i int) rune {
		if i+4 > len(b) {
			return -1
		}
		var r rune
		for _, c := range b[i : i+4] {
			switch {
			case '0' <= c && c <= '9':
				c -= '0'
			case 'a' <= c && c <= 'f':
				c -= 'a' - 10
			case 'A' <= c && c <= 'F':
				c -= 'A' - 10
			default:
				return -1
			}
			r = r<<4 | rune(c)
		}
		return r
	}
	for i := 0; ; {
		k := bytes.IndexByte(b[i:], '\\')
		if k < 0 {
			return ""
		}
		i += k + 1 // the escaped character
		if i == len(b) {
			return "a truncated escape"
		}
		if b[i] != 'u' {
			i++ // \" \\ \/ \b \f \n \r \t stand for one character
			continue
		}
		r := hex4(i + 1)
		i += 5 // past \uXXXX
		switch {
		case r < 0:
			return "a malformed \\u escape"
		case r == 0:
			return "an escaped NUL (\\u0000)"
		case 0xDC00 <= r && r <= 0xDFFF:
			return "a lone surrogate escape"
		case 0xD800 <= r && r <= 0xDBFF:
			if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
				if lo := hex4(i + 2); 0xDC00 <= lo && lo <= 0xDFFF {
					i += 6 // the pair stands for one character
					continue
				}
			}
			return "a lone surrogate escape"
		}
	}
}
