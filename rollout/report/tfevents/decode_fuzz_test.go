package tfevents

import (
	"encoding/hex"
	"testing"
)

// FuzzDecode: any bytes decode without a panic, and the events of a file
// that decodes whole encode back to a file that decodes to them again.
func FuzzDecode(f *testing.F) {
	b, err := hex.DecodeString(golden)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:30])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, events, torn, err := Decode(b)
		if err != nil || torn {
			return
		}
		_, again, torn, err := Decode(Encode(0, events))
		if err != nil || torn || len(again) != len(events) {
			t.Fatalf("re-encoded %d events: %d back, torn %v, %v", len(events), len(again), torn, err)
		}
	})
}
