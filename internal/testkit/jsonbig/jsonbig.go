// Package jsonbig is what the tests of PostgreSQL's jsonb limits share: the
// large JSON documents they need, built once per test binary, and
// PostgreSQL's own measure of a document.
package jsonbig

import "sync"

// Repeat returns open, then n copies of item separated by commas, then
// close.
func Repeat(open, item string, n int, close string) []byte {
	b := make([]byte, 0, len(open)+n*(len(item)+1)+len(close))
	b = append(b, open...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	return append(b, close...)
}

// Over returns a JSON document whose jsonb encoding is just over
// PostgreSQL's limit of 268,435,455 bytes while its text is 45 MB: two
// arrays of zeros, 16,777,216 and 5,592,404 of them, 12 bytes each in
// jsonb. With one zero fewer psql gives pg_column_size 268,435,450: 4 bytes
// of header and 268,435,446 of jsonb; the last zero makes 268,435,458.
// Built once: several tests share it; do not modify it.
var Over = sync.OnceValue(func() []byte {
	return append(append(Repeat("[[", "0", 1<<24, "],"), Repeat("[", "0", 5592404, "]")...), ']')
})
