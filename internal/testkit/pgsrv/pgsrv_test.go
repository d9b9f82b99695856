package pgsrv

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	srv, err := Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("URL %s (private: %v)", srv.URL, srv.Private != nil)
	var one int
	if err := connect(t, srv.URL).QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

// A shared server with fewer connections free than the caller needs is
// passed over for a private cluster; one with room enough is used.
func TestDiscoverWithRoomPassesOverAFullServer(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("DOCKET_PG", "")
	if probe(t.Context(), localURL) != nil {
		t.Skip("no server on 127.0.0.1:5432 to pass over; the private path is TestCluster's")
	}
	free, err := freeConnections(t.Context(), localURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		room        int
		wantPrivate bool
	}{{room: 1, wantPrivate: free < 1}, {room: free + 1000, wantPrivate: true}} {
		srv, err := DiscoverWithRoom(t.Context(), c.room)
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.Private != nil; got != c.wantPrivate {
			t.Errorf("room %d with %d free: private = %v, want %v", c.room, free, got, c.wantPrivate)
		}
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	}
}

func TestDiscoverRejectsUnknownMode(t *testing.T) {
	t.Setenv("DOCKET_PG", "bogus")
	if _, err := Discover(t.Context()); err == nil || !strings.Contains(err.Error(), "DOCKET_PG") {
		t.Fatalf("err = %v, want one naming DOCKET_PG", err)
	}
}

func TestNoBinariesErrorSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := debianBinGlob
	debianBinGlob = t.TempDir() + "/*/bin"
	t.Cleanup(func() { debianBinGlob = old })

	_, err := StartCluster(t.Context())
	if !errors.Is(err, errNoBinaries) || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("err = %v, want errNoBinaries with install instructions", err)
	}
}

// TestCluster runs the private-cluster path even where a shared server
// exists, so that it cannot rot unnoticed.
func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c, err := StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	url := c.URL()

	conn := connect(t, url)
	if _, err := conn.Exec(ctx, "CREATE TABLE survivor (id int); INSERT INTO survivor VALUES (42)"); err != nil {
		t.Fatal(err)
	}

	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if c.URL() != url {
		t.Fatalf("URL changed across restart: %s -> %s", url, c.URL())
	}
	// The old session was disconnected by the restart.
	if err := conn.Ping(ctx); err == nil {
		t.Error("session survived a restart")
	}
	var id int
	if err := connect(t, url).QueryRow(ctx, "SELECT id FROM survivor").Scan(&id); err != nil || id != 42 {
		t.Fatalf("after restart: id = %d, %v", id, err)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := net.DialTimeout("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), time.Second); err == nil {
		nc.Close()
		t.Errorf("port %d still accepts connections after Stop", cfg.Port)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temp dir %s: %v, want it gone", c.dir, err)
	}
	if err := c.Restart(ctx); err == nil {
		t.Error("Restart after Stop succeeded")
	}
}

// Clusters start from one template data directory, made by initdb once
// for these binaries: two clusters have the template's system identifier,
// which initdb draws anew each time it runs.
func TestClustersStartFromTemplate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var ids []uint64
	for range 2 {
		c, err := StartCluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop() })
		var id uint64
		if err := connect(t, c.URL()).QueryRow(ctx, "SELECT system_identifier FROM pg_control_system()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if ids[0] != ids[1] {
		t.Errorf("system identifiers %d and %d: the clusters were not copied from one template", ids[0], ids[1])
	}
	key, err := templateKey(mustBinaries(t))
	if err != nil {
		t.Fatal(err)
	}
	if data := filepath.Join(os.TempDir(), "docket-pg-template-"+key, "data"); !isDataDir(data) {
		t.Errorf("no template data directory at %s", data)
	}
}

func mustBinaries(t *testing.T) string {
	t.Helper()
	bin, err := findBinaries()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"postgresql://u:p%40ss@h1:5432,h2:5433/old?sslmode=disable&application_name=x",
		"postgres://u@h?dbname=old&sslmode=disable",
		"postgres://h:5432",
		"postgres:///old?host=/tmp&port=5433",
		"host=127.0.0.1 port=5433 user=u password='a b' dbname=old sslmode=disable",
		"host=127.0.0.1 sslmode=disable",
	} {
		out, err := WithDatabase(in, "docket_test_x")
		if err != nil {
			t.Errorf("WithDatabase(%q): %v", in, err)
			continue
		}
		before, _ := pgconn.ParseConfig(in)
		after, err := pgconn.ParseConfig(out)
		if err != nil {
			t.Errorf("WithDatabase(%q) = %q, does not parse: %v", in, out, err)
			continue
		}
		if after.Database != "docket_test_x" {
			t.Errorf("WithDatabase(%q) = %q, database %q", in, out, after.Database)
		}
		if before.Host != after.Host || before.Port != after.Port || before.User != after.User ||
			before.Password != after.Password || len(before.Fallbacks) != len(after.Fallbacks) ||
			before.RuntimeParams["application_name"] != after.RuntimeParams["application_name"] {
			t.Errorf("WithDatabase(%q) = %q changed more than the database", in, out)
		}
	}
	if _, err := WithDatabase("postgres://h:notaport/x", "y"); err == nil {
		t.Error("bad URL accepted")
	}
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	if compareVersions("9.6", "15") >= 0 || compareVersions("17", "15") <= 0 || compareVersions("15", "15") != 0 {
		t.Error("compareVersions orders versions wrongly")
	}
}
