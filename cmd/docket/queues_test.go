package main

import (
	"strings"
	"testing"
)

// A queue nothing uses is neither paused nor resumed unless pause says
// --create: a mistyped name must not leave a phantom paused queue behind.
func TestQueuesPauseUnknownQueue(t *testing.T) {
	t.Parallel()
	url, schema, _ := opsSetup(t)
	cmd := func(args ...string) (int, string, string) {
		return runDocket(t, append(args, "--database-url", url, "--schema", schema)...)
	}
	if code, out, errOut := cmd("queues", "pause", "mial"); code != exitFailure || out != "" ||
		!strings.Contains(errOut, `queue "mial" is not in use`) || !strings.Contains(errOut, "--create") {
		t.Errorf("pause of a queue nothing uses: exit %d, stdout %q, stderr %q; want exit 1 naming the queue and --create", code, out, errOut)
	}
	if code, _, errOut := cmd("queues", "resume", "mial"); code != exitFailure || !strings.Contains(errOut, `queue "mial" is not in use`) {
		t.Errorf("resume of a queue nothing uses: exit %d, stderr %q", code, errOut)
	}
	if _, out, _ := cmd("queues", "list"); !strings.Contains(out, "no paused queues") {
		t.Errorf("refusals paused a queue:\n%s", out)
	}
	if _, out, _ := cmd("status"); strings.Contains(out, "mial") {
		t.Errorf("status shows the refused queue:\n%s", out)
	}
	for _, args := range [][]string{{"queues", "pause", "mail"}, {"queues", "pause", "mial", "--create"}} {
		if code, out, errOut := cmd(args...); code != 0 || !strings.Contains(out, "paused queue "+args[2]) {
			t.Errorf("docket %v: %d %q %q", args, code, out, errOut)
		}
	}
	if _, out, _ := cmd("queues", "list"); !strings.Contains(out, "mail\tpaused") || !strings.Contains(out, "mial\tpaused") {
		t.Errorf("list after the pauses:\n%s", out)
	}
	if code, _, errOut := cmd("queues", "resume", "mial"); code != 0 {
		t.Errorf("resume of a created queue: %d %s", code, errOut)
	}
}
