package enqueue

import (
	"encoding/binary"
	"fmt"
)

// What PostgreSQL's jsonb can hold. The server refuses a payload or meta
// outside these limits (SQLSTATE 22003, 22P02, 22P05, 54000, 54001 or
// XX000), which aborts the caller's transaction, so enqueue checks them
// first.
const (
	// maxJSONBSize bounds the jsonb encoding of a document and of each
	// array and object in it, headers included: an entry's length field
	// has 28 bits.
	maxJSONBSize = 1<<28 - 1
	// maxJSONBElems and maxJSONBPairs bound an array's elements and an
	// object's members (duplicate keys included). jsonb_in gathers them in
	// a buffer it doubles; one more asks for a buffer of 1 GiB or more,
	// which PostgreSQL never allocates at once.
	maxJSONBElems = 1 << 24
	maxJSONBPairs = 1 << 23
	// maxJSONDepth bounds the nesting of arrays and objects: Go's
	// encoding/json decodes no deeper, so a handler could not read more,
	// and PostgreSQL, with its default max_stack_depth of 2 MB, parses
	// somewhat deeper (about 13,000 levels inside the JSON array of a bulk
	// enqueue).
	maxJSONDepth = 10000
	// jsonb stores numbers as numeric: at most 131072 digits before the
	// decimal point (the leading digit stands for at most 10^131071) and
	// 16383 after it, counting the zeros written after the point; the
	// exponent must be below 2^30-1 in size even for zero.
	maxNumericPower    = 131071
	maxNumericScale    = 16383
	maxNumericExponent = 1<<30 - 2
)

// jsonbSize is what PostgreSQL makes of a JSON document, in bytes.
type jsonbSize struct {
	// stored is the size of its jsonb encoding (without the 4-byte
	// varlena header). It is exact for arrays and scalars. An object's
	// members are sorted before they are laid out, so inside an object
	// each number and nested array or object is counted with 3 bytes of
	// alignment, the most jsonb adds, and duplicate keys count each time.
	stored int64
	// rendered is the length of the text PostgreSQL writes for it
	// (jsonb_out: ", " and ": " between items, numbers in plain decimal),
	// duplicate keys counted each time.
	rendered int64
}

// jsonFrame is an array or object being read.
type jsonFrame struct {
	object   bool
	wantKey  bool  // object: the next string is a member's key
	n        int64 // elements, or members
	stored   int64 // bytes of keys and values, alignment included
	rendered int64 // text of the items, separators included
}

// checkJSONB reads the JSON text b once and returns the sizes of its jsonb
// form (see jsonbSize) and, when PostgreSQL's jsonb cannot store it, what
// is wrong, as a phrase to follow "payload " or "meta " ("" when nothing):
//
//   - an escaped NUL (\u0000), which jsonb has no way to hold;
//   - a lone UTF-16 surrogate: a high surrogate (\uD800–\uDBFF) not followed
//     at once by an escaped low one (\uDC00–\uDFFF), or a low one without a
//     high one just before it, which jsonb rejects as invalid input;
//   - a number outside numeric's range (see maxNumericPower);
//   - nesting deeper than maxJSONDepth, an array of more than
//     maxJSONBElems elements or an object of more than maxJSONBPairs
//     members;
//   - an encoding over maxJSONBSize bytes.
//
// Escapes are read one by one, so the text C:\\u0000dir (an escaped
// backslash, then the letters u0000) is not taken for a NUL, while
// \\\u0000 (an escaped backslash, then an escaped NUL) is. b must be valid
// JSON, as json.Marshal returns it: other input does not make it panic, but
// may be reported as "is not valid JSON" or not at all. b is not modified.
func checkJSONB(b []byte) (jsonbSize, string) {
	// cur is the innermost array or object being read, when depth > 0;
	// outer holds those around it. Kept apart, cur stays in registers.
	var cur jsonFrame
	depth := 0
	var frames [4]jsonFrame // no allocation for documents up to 5 deep
	outer := frames[:0]
	i := 0
	for i < len(b) {
		// Read one value, or the start of an array or object, or the
		// punctuation between them.
		var stored, rendered int64
		aligned := false // jsonb aligns numbers and containers to 4 bytes
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			i++
			continue
		case ',':
			cur.wantKey = cur.object
			i++
			continue
		case '[', '{':
			if depth == maxJSONDepth {
				return jsonbSize{}, fmt.Sprintf("nests arrays and objects more than %d deep", maxJSONDepth)
			}
			if depth > 0 {
				outer = append(outer, cur)
			}
			cur = jsonFrame{object: c == '{', wantKey: c == '{'}
			depth++
			i++
			continue
		case ']', '}':
			if depth == 0 || cur.object != (c == '}') {
				return jsonbSize{}, "is not valid JSON"
			}
			entries := cur.n // one entry per element, two per member
			if cur.object {
				if cur.n > maxJSONBPairs {
					return jsonbSize{}, fmt.Sprintf("holds an object of more than %d members, jsonb's limit", maxJSONBPairs)
				}
				entries *= 2
			} else if cur.n > maxJSONBElems {
				return jsonbSize{}, fmt.Sprintf("holds an array of more than %d elements, jsonb's limit", maxJSONBElems)
			}
			stored, rendered, aligned = 4+4*entries+cur.stored, 2+cur.rendered, true
			i++
			if depth--; depth == 0 {
				return jsonbEnd(b, i, jsonbSize{stored, rendered})
			}
			cur = outer[len(outer)-1]
			outer = outer[:len(outer)-1]
		case '"':
			end, st, rd, p := jsonString(b, i)
			if p != "" {
				return jsonbSize{}, p
			}
			i, stored, rendered = end, st, rd
			if cur.wantKey {
				cur.wantKey = false
				cur.n++
				cur.stored += stored
				cur.rendered += rendered + 2 // ": "
				if cur.n > 1 {
					cur.rendered += 2 // ", "
				}
				continue
			}
		case 't', 'n', 'f':
			rendered = 4 // true, null
			if c == 'f' {
				rendered = 5 // false
			}
			if i += int(rendered); i > len(b) {
				return jsonbSize{}, "is not valid JSON"
			}
		default:
			end, st, rd, ok := jsonNumber(b, i)
			if end == i {
				return jsonbSize{}, "is not valid JSON"
			}
			if !ok {
				return jsonbSize{}, fmt.Sprintf("holds a number outside PostgreSQL numeric's range (at most %d digits before the decimal point and %d after)",
					maxNumericPower+1, maxNumericScale)
			}
			i, stored, rendered, aligned = end, st, rd, true
		}
		if depth == 0 {
			// A scalar: jsonb stores it as an array of one, whose header
			// and entry leave the value aligned.
			return jsonbEnd(b, i, jsonbSize{8 + stored, rendered})
		}
		if aligned {
			if cur.object {
				cur.stored += 3 // the most alignment can add
			} else {
				cur.stored += -cur.stored & 3
			}
		}
		cur.stored += stored
		cur.rendered += rendered
		if !cur.object {
			if cur.n++; cur.n > 1 {
				cur.rendered += 2 // ", "
			}
		}
	}
	return jsonbSize{}, "is not valid JSON"
}

// jsonbEnd checks what follows the document's value, which ends at b[i],
// and its size.
func jsonbEnd(b []byte, i int, size jsonbSize) (jsonbSize, string) {
	for ; i < len(b); i++ {
		if c := b[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return jsonbSize{}, "is not valid JSON"
		}
	}
	if size.stored > maxJSONBSize {
		return size, fmt.Sprintf("needs up to %d bytes in jsonb, over its limit of %d", size.stored, maxJSONBSize)
	}
	return size, ""
}

// jsonString reads the string that starts with the quote at b[i] and
// returns the index just past it, its bytes in jsonb (unescaped) and as
// PostgreSQL writes it back (quoted, with ", \ and control characters
// escaped), or what jsonb cannot store in it.
func jsonString(b []byte, i int) (end int, stored, rendered int64, problem string) {
	rendered = 2 // the quotes
	i++
	for {
		// Plain bytes stand for themselves, in jsonb and in PostgreSQL's
		// text alike (JSON has no raw control characters in strings).
		at := i
		for i+8 <= len(b) && !quoteOrBackslash(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		stored += int64(i - at)
		rendered += int64(i - at)
		if i == len(b) {
			return 0, 0, 0, "is not valid JSON"
		}
		if b[i] == '"' {
			return i + 1, stored, rendered, ""
		}
		i++ // the escaped character
		if i == len(b) {
			return 0, 0, 0, "is not valid JSON"
		}
		var r rune
		switch b[i] {
		case '"', '\\', '/':
			r = rune(b[i])
			i++
		case 'b':
			r, i = '\b', i+1
		case 'f':
			r, i = '\f', i+1
		case 'n':
			r, i = '\n', i+1
		case 'r':
			r, i = '\r', i+1
		case 't':
			r, i = '\t', i+1
		case 'u':
			r = hex4(b, i+1)
			i += 5 // past uXXXX
			switch {
			case r < 0:
				return 0, 0, 0, "holds a malformed \\u escape"
			case r == 0:
				return 0, 0, 0, "holds an escaped NUL (\\u0000), which jsonb cannot store"
			case 0xDC00 <= r && r <= 0xDFFF:
				return 0, 0, 0, "holds a lone surrogate escape, which jsonb cannot store"
			case 0xD800 <= r && r <= 0xDBFF:
				if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					if lo := hex4(b, i+2); 0xDC00 <= lo && lo <= 0xDFFF {
						i += 6 // the pair stands for one character of 4 bytes
						stored += 4
						rendered += 4
						continue
					}
				}
				return 0, 0, 0, "holds a lone surrogate escape, which jsonb cannot store"
			}
		default:
			return 0, 0, 0, "holds a malformed escape"
		}
		switch {
		case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
			stored, rendered = stored+1, rendered+2
		case r < 0x20:
			stored, rendered = stored+1, rendered+6 // \u00XX
		case r < 0x80:
			stored, rendered = stored+1, rendered+1
		case r < 0x800:
			stored, rendered = stored+2, rendered+2
		default:
			stored, rendered = stored+3, rendered+3
		}
	}
}

// jsonNumber reads the number at b[i] and returns the index just past it
// (i when there is none), the size of its numeric in jsonb (without
// alignment) and of the text PostgreSQL writes for it, and whether numeric
// can hold it. It follows numeric_in: the digits are kept as written (so
// 1.50 keeps its two decimals), in groups of four around the decimal
// point, without leading and trailing zero groups.
func jsonNumber(b []byte, i int) (end int, stored, rendered int64, ok bool) {
	start := i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	intAt := i
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	intDigits := b[intAt:i]
	var frac []byte
	if i < len(b) && b[i] == '.' {
		i++
		at := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		frac = b[at:i]
	}
	if len(intDigits) == 0 {
		return start, 0, 0, false
	}
	var exp int64
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		sign := int64(1)
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			if b[i] == '-' {
				sign = -1
			}
			i++
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			if exp <= maxNumericExponent {
				exp = exp*10 + int64(b[i]-'0')
			}
			i++
		}
		exp *= sign
	}
	if exp > maxNumericExponent || exp < -maxNumericExponent {
		return i, 0, 0, false
	}
	scale := max(int64(len(frac))-exp, 0) // digits after the point
	if scale > maxNumericScale {
		return i, 0, 0, false
	}
	// The powers of ten of the first and last non-zero digits.
	hi, lo, zero := int64(0), int64(0), true
	for k, d := range intDigits {
		if d != '0' {
			if zero {
				hi, zero = int64(len(intDigits)-1-k)+exp, false
			}
			lo = int64(len(intDigits)-1-k) + exp
		}
	}
	for k, d := range frac {
		if d != '0' {
			if zero {
				hi, zero = int64(-k-1)+exp, false
			}
			lo = int64(-k-1) + exp
		}
	}
	if !zero && hi > maxNumericPower {
		return i, 0, 0, false
	}
	// numeric_out: sign, the integer part (at least "0"), the decimals.
	rendered = 1
	if !zero && hi > 0 {
		rendered = hi + 1
	}
	if neg {
		rendered++ // "-0" is written "0": one byte too many
	}
	if scale > 0 {
		rendered += 1 + scale
	}
	// A numeric is a 4-byte varlena header, a 2-byte header when the scale
	// and weight are small (4 bytes otherwise), and 2 bytes per base-10000
	// digit; zero has none and weight 0.
	weight, digits := int64(0), int64(0)
	if !zero {
		weight, digits = numericGroup(hi), numericGroup(hi)-numericGroup(lo)+1
	}
	header := int64(4)
	if scale <= 63 && -64 <= weight && weight <= 63 {
		header = 2
	}
	return i, 4 + header + 2*digits, rendered, true
}

// quoteOrBackslash reports whether one of the 8 bytes of x is '"' or '\\'.
// A byte of x^c is zero where x holds c, and (v-ones)&^v&tops is non-zero
// exactly when v has a zero byte: a borrow may mark a byte above a zero
// one, never a word without one.
func quoteOrBackslash(x uint64) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	q, s := x^(ones*'"'), x^(ones*'\\')
	return ((q-ones)&^q|(s-ones)&^s)&tops != 0
}

// numericGroup returns the place of the base-10000 digit of a numeric that
// holds 10^p: 0 for 10^0 to 10^3, -1 for 10^-1 to 10^-4.
func numericGroup(p int64) int64 {
	if p < 0 {
		return -((-p + 3) / 4)
	}
	return p / 4
}

// hex4 decodes the four hex digits at b[i:], or returns -1.
func hex4(b []byte, i int) rune {
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
