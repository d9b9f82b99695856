package handlers

import (
	"encoding/json"
	"strings"
	"testing"
)

// Decoding errors are described without quoting the payload.
func TestDecodeDetailHidesPayload(t *testing.T) {
	t.Parallel()
	var dst struct {
		N int8   `json:"n"`
		S string `json:"s"`
	}
	for _, payload := range []string{
		`{"n": 123456789}`,       // overflow: encoding/json quotes the number
		`{"s": 12345.678}`,       // wrong type
		`{"n": 1, "s": "ab`,      // truncated
		`{"s": "x" "123456789"}`, // syntax
	} {
		err := json.Unmarshal([]byte(payload), &dst)
		if err == nil {
			t.Fatalf("%s decoded", payload)
		}
		d := decodeDetail(err)
		for _, secret := range []string{"123456789", "12345", "ab"} {
			if strings.Contains(d, secret) {
				t.Errorf("detail %q of %s quotes the payload (raw error: %v)", d, payload, err)
			}
		}
	}
}
