// Package plural writes counts in English for people: "1 job", "2 jobs",
// "10,000 jobs", "at least 1,000 jobs". Docket's warnings, the CLI and the
// dashboard use it so that a count reads the same everywhere.
package plural

import "strconv"

// Noun returns one when n is 1 or -1 and many otherwise.
func Noun(n int64, one, many string) string {
	if n == 1 || n == -1 {
		return one
	}
	return many
}

// Count returns n, with thousands separators, and the noun that agrees
// with it: Count(1, "job", "jobs") is "1 job", Count(1000, …) "1,000 jobs".
func Count(n int64, one, many string) string {
	return Number(n) + " " + Noun(n, one, many)
}

// AtLeast is Count for a count that stopped at a limit and is a lower
// bound: "at least 1,000 jobs".
func AtLeast(n int64, one, many string) string {
	return "at least " + Count(n, one, many)
}

// Number writes n with a comma between groups of three digits: 1234567 is
// "1,234,567", -1000 is "-1,000".
func Number(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return sign + string(out)
}
