package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/pgtest"
)

// serveDashboard runs docket dashboard with args until the test ends and
// returns its base URL and its stderr.
func serveDashboard(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	var code int
	done := make(chan struct{})
	go func() {
		defer close(done)
		code = run(ctx, append([]string{"dashboard", "--addr", "127.0.0.1:0"}, args...), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	addr := regexp.MustCompile(`dashboard on (http://\S+)/`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			return m[1], &errOut
		}
		select {
		case <-done:
			t.Fatalf("docket dashboard exited %d: %s", code, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("docket dashboard did not start: %s", errOut.String())
		}
	}
}

// dashboardGet requests u with the Host header host (empty: u's own) and
// header name/value pairs, following no redirect.
func dashboardGet(t *testing.T, u, host string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// Without a token, docket dashboard answers loopback hosts, its --addr
// host and --allowed-hosts, refuses any other Host and logs the refusal.
func TestDashboardHostCheck(t *testing.T) {
	t.Parallel()
	u, errOut := serveDashboard(t, "--database-url", pgtest.URL(t), "--schema", pgtest.Schema(t), "--allowed-hosts", "dash.internal, ops.example.com")
	port := u[strings.LastIndex(u, ":")+1:]
	for host, want := range map[string]int{
		"":                      http.StatusOK, // 127.0.0.1:port, the --addr host
		"localhost:" + port:     http.StatusOK,
		"dash.internal:" + port: http.StatusOK,
		"ops.example.com":       http.StatusOK,
		"evil.example:" + port:  http.StatusForbidden,
	} {
		if resp := dashboardGet(t, u+"/assets/app.js", host); resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
	if !strings.Contains(errOut.String(), "request refused") || !strings.Contains(errOut.String(), "host=evil.example:"+port) || !strings.Contains(errOut.String(), "remote=127.0.0.1:") {
		t.Errorf("no refusal line with host and remote address on stderr:\n%s", errOut)
	}
}

// With a token: bearer in any case, and behind --trust-proxy a cookie that
// is Secure over https and lives --token-max-age.
func TestDashboardTokenAndProxy(t *testing.T) {
	t.Parallel()
	u, _ := serveDashboard(t, "--database-url", pgtest.URL(t), "--schema", pgtest.Schema(t),
		"--token", "s3cret", "--trust-proxy", "--token-max-age", "1h")
	if resp := dashboardGet(t, u+"/assets/app.js", "evil.example", "Authorization", "bearer s3cret"); resp.StatusCode != http.StatusOK {
		t.Errorf("lower-case bearer token: %d, want 200", resp.StatusCode)
	}
	resp := dashboardGet(t, u+"/?token=s3cret", "", "X-Forwarded-Proto", "https")
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "docket_dashboard_token" {
			ck = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || ck == nil || !ck.Secure || ck.MaxAge != 3600 {
		t.Errorf("?token= through an https proxy: %d, cookie %v; want 303, Secure, Max-Age=3600", resp.StatusCode, ck)
	}
}

// The new flags' mistakes are usage errors, found before connecting.
func TestDashboardFlagErrors(t *testing.T) {
	t.Parallel()
	unreachable := "postgres://nobody@127.0.0.1:1/x?connect_timeout=2"
	for _, args := range [][]string{
		{"--allowed-hosts", "dash.internal:8080"},
		{"--allowed-hosts", "http://dash.internal"},
		{"--token-max-age", "10ms"},
	} {
		code, _, errOut := runDocket(t, append([]string{"dashboard", "--database-url", unreachable}, args...)...)
		if code != 2 || strings.Contains(errOut, "cannot connect") {
			t.Errorf("%v: exit %d, want 2 before connecting: %s", args, code, errOut)
		}
	}
}

// The --addr host joins --allowed-hosts when the Host is checked, unless
// it names every interface.
func TestDashboardListenHosts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		list, listen string
		token        bool
		want         string
	}{
		{"", "127.0.0.1", false, "127.0.0.1"},
		{" a.example , b.example,", "10.0.0.5", false, "a.example b.example 10.0.0.5"},
		{"", "10.0.0.5", true, ""}, // a token alone: no Host check, no list
		{"a.example", "10.0.0.5", true, "a.example 10.0.0.5"},
		{"a.example", "0.0.0.0", true, "a.example"},
		{"a.example", "::", true, "a.example"},
		{"a.example", "", true, "a.example"},
	} {
		if got := strings.Join(listenHosts(c.list, c.listen, c.token), " "); got != c.want {
			t.Errorf("listenHosts(%q, %q, token %v) = %q, want %q", c.list, c.listen, c.token, got, c.want)
		}
	}
}
