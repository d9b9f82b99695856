package dashboard

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestAssetsMatchLock checks that every vendored file embedded in the
// binary is the one assets.lock pins: same name, same sha256. A hand edit
// or a half-finished update fails here; `go generate ./dashboard` fixes it.
func TestAssetsMatchLock(t *testing.T) {
	t.Parallel()
	f, err := os.Open("assets.lock")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 4 || len(fields[3]) != 64 {
			t.Fatalf("assets.lock: malformed line %q", sc.Text())
		}
		data, err := assets.ReadFile("assets/" + fields[0])
		if err != nil {
			t.Errorf("%s (%s) is not embedded: %v", fields[0], fields[1], err)
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != fields[3] {
			t.Errorf("%s: sha256 %s, assets.lock pins %s for %s", fields[0], got, fields[3], fields[1])
		}
		n++
	}
	if n < 3 {
		t.Errorf("assets.lock lists %d files, want uPlot's", n)
	}
}
