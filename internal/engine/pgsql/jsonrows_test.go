package pgsql

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// JSONRows splits rows into JSON arrays of at most MaxRowsDoc bytes, in
// order, a row over that alone in its array.
func TestJSONRowsSplitsAtTheBudget(t *testing.T) {
	t.Parallel()
	kilo := strings.Repeat("k", 1000)
	var rows []map[string]any
	for id := range 70000 { // about 70 MiB: two arrays
		rows = append(rows, map[string]any{"id": id, "s": kilo})
	}
	big := len(rows)
	rows = append(rows, map[string]any{"id": big, "s": strings.Repeat("b", MaxRowsDoc)})
	rows = append(rows, map[string]any{"id": big + 1, "s": "after"})
	var arrays [][]int
	err := JSONRows(rows, func(doc string) error {
		var got []struct{ ID int }
		if err := json.Unmarshal([]byte(doc), &got); err != nil {
			t.Fatalf("array %d: %v", len(arrays), err)
		}
		if len(doc) > MaxRowsDoc && len(got) > 1 {
			t.Errorf("array %d: %d bytes, %d rows", len(arrays), len(doc), len(got))
		}
		ids := make([]int, len(got))
		for i, r := range got {
			ids[i] = r.ID
		}
		arrays = append(arrays, ids)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(arrays) != 4 || !slices.Equal(arrays[2], []int{big}) || !slices.Equal(arrays[3], []int{big + 1}) {
		t.Fatalf("arrays of %d, %d... rows, want the first 70,000 rows in two, then the big row alone, then the last", len(arrays[0]), len(arrays[1]))
	}
	if all := slices.Concat(arrays...); len(all) != len(rows) || !slices.IsSorted(all) || all[0] != 0 {
		t.Fatalf("rows out of order or lost: %d of %d", len(all), len(rows))
	}
	stop := errors.New("stop")
	calls := 0
	if err := JSONRows(rows, func(string) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("JSONRows went on after send failed: %v after %d calls", err, calls)
	}
}
