package worker

import "testing"

// A slot that frees wakes the claim loop only once the claim the loop
// waits to start can start (busy down to claimAt), not once per job; the
// end of a limited job always wakes it, for the limited claim.
func TestFreedSlotWakesClaimLoopOnlyWhenItCanClaim(t *testing.T) {
	t.Parallel()
	p := &pool{freed: make(chan struct{}, 1)}
	woken := func() bool {
		select {
		case <-p.freed:
			return true
		default:
			return false
		}
	}
	p.busy.Store(10)
	p.claimAt.Store(8)
	p.ran(&task{})
	if woken() {
		t.Error("woken at busy 9 although the claim waits for busy 8")
	}
	p.ran(&task{})
	if !woken() {
		t.Error("not woken at busy 8, where the claim can start")
	}
	p.claimAt.Store(-1)
	p.ran(&task{})
	if woken() {
		t.Error("woken although the loop waits for no claim")
	}
	p.limitedBusy.Store(1)
	p.ran(&task{limit: "tenant-cap"})
	if !woken() {
		t.Error("the end of a limited job did not wake the loop")
	}
}
