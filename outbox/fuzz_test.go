package outbox

import (
	"strings"
	"testing"

	"github.com/docketq/docket/internal/engine/core"
)

// FuzzKeyPart checks that an event key's relay partition is stable and in
// [0, EventParts).
func FuzzKeyPart(f *testing.F) {
	for _, k := range []string{"", "order:42", "order:43", "\xff", strings.Repeat("k", core.MaxKeyLen)} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		p := keyPart(key)
		if p < 0 || p >= EventParts {
			t.Fatalf("keyPart(%q) = %d, outside [0, %d)", key, p, EventParts)
		}
		if p != keyPart(key) {
			t.Fatalf("keyPart(%q) is not stable", key)
		}
	})
}
