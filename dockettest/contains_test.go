package dockettest

import "testing"

func TestContains(t *testing.T) {
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{`{}`, `{"a": 1}`, true},
		{`{"a": 1}`, `{"a": 1, "b": 2}`, true},
		{`{"a": 1}`, `{"a": 2}`, false},
		{`{"a": 1}`, `{"b": 1}`, false},
		{`{"a": {"x": "y"}}`, `{"a": {"x": "y", "z": 0}}`, true},
		{`{"a": {"x": "y"}}`, `{"a": "x"}`, false},
		{`{"a": [2]}`, `{"a": [1, 2, 3]}`, true},
		{`{"a": [4]}`, `{"a": [1, 2, 3]}`, false},
		{`{"a": [{"id": 1}]}`, `{"a": [{"id": 1, "n": "x"}]}`, true},
		{`{"a": null}`, `{"a": null}`, true},
		{`{"a": null}`, `{}`, false},
		{`{"a": "1"}`, `{"a": 1}`, false},
		{`{"a": 1}`, `not json`, false},
	} {
		if got := contains([]byte(c.want), []byte(c.got)); got != c.ok {
			t.Errorf("contains(%s, %s) = %v, want %v", c.want, c.got, got, c.ok)
		}
	}
}
