package plural

import (
	"math"
	"testing"
)

func TestNumber(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 10_000: "10,000", 123_456: "123,456",
		1_234_567: "1,234,567", -1: "-1", -1000: "-1,000", -999_999: "-999,999",
		math.MaxInt64: "9,223,372,036,854,775,807", math.MinInt64: "-9,223,372,036,854,775,808",
	} {
		if got := Number(n); got != want {
			t.Errorf("Number(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 live workers"}, {1, "1 live worker"}, {2, "2 live workers"}, {1000, "1,000 live workers"}, {-1, "-1 live worker"}} {
		if got := Count(tc.n, "live worker", "live workers"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := AtLeast(1000, "ready job", "ready jobs"); got != "at least 1,000 ready jobs" {
		t.Errorf("AtLeast(1000) = %q", got)
	}
}
