package dashboard_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/dashboard"
	"github.com/docketq/docket/dashboard/internal/dashtest"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The fixture the tests share with the browser tests.
type (
	mail       = dashtest.Mail
	bundle     = dashtest.Bundle
	syncBuffer = dashtest.SyncBuffer
)

const secret = dashtest.Secret

var csrfInput = dashtest.CSRFInput

func setup(t *testing.T, cfg dashboard.Config) *bundle { return dashtest.Setup(t, cfg) }

// client is a browser-like HTTP client: cookies kept, redirects not
// followed (tests look at them).
func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches path and returns the status and body.
func get(t *testing.T, c *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func post(t *testing.T, c *http.Client, u string, form url.Values, header ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// csrf opens a page and returns the CSRF token its forms carry.
func csrf(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	code, body, _ := get(t, c, u)
	m := csrfInput.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET %s: %d, no CSRF field:\n%s", u, code, body)
	}
	return m[1]
}

// enqueueMail enqueues one more mail job in queue q.
func enqueueMail(t *testing.T, b *bundle, q string) int64 {
	t.Helper()
	cl, err := docket.NewClient(b.Pool, docket.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	e, err := cl.Enqueue(b.Ctx, b.Pool, mail{To: secret}, docket.Opts{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}

// dashboardFilter selects the dead jobs of queue q.
func dashboardFilter(q string) admin.JobFilter {
	return admin.JobFilter{State: admin.StateDead, Queue: q}
}
