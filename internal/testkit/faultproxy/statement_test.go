package faultproxy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docketq/docket/internal/testkit/pgtest"
)

// CutAfter lets the aimed statement run and commit, then cuts before the
// client hears of it; statements before it pass. It works in every query
// mode pgx has (named prepared statements, unnamed ones, simple protocol).
func TestCutAfterStatement(t *testing.T) {
	t.Parallel()
	schema := pgtest.Schema(t)
	admin := pgtest.PoolN(t, 2)
	if _, err := admin.Exec(t.Context(), "CREATE TABLE "+schema+".marks (mode text, n int)"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		p, cfg := pgProxy(t)
		cfg.DefaultQueryExecMode = mode
		conn := connect(t, cfg)
		insert := "INSERT INTO " + schema + ".marks VALUES ($1, $2)"
		// The statement runs once before the arm: prepared by then, it is
		// sent by name only the second time.
		if _, err := conn.Exec(t.Context(), insert, mode.String(), 1); err != nil {
			t.Fatal(err)
		}
		fired := p.CutAfter(func(sql string) bool { return strings.Contains(sql, ".marks VALUES") })
		if _, err := conn.Exec(t.Context(), "SELECT 1"); err != nil {
			t.Fatalf("%s: a statement that does not match was cut: %v", mode, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := conn.Exec(ctx, insert, mode.String(), 2)
		cancel()
		if err == nil {
			t.Fatalf("%s: the aimed statement returned no error", mode)
		}
		select {
		case sql := <-fired:
			if !strings.Contains(sql, "marks") {
				t.Errorf("%s: fired on %q", mode, sql)
			}
		default:
			t.Fatalf("%s: the statement failed (%v) but the cut did not fire", mode, err)
		}
		var n int
		if err := admin.QueryRow(t.Context(), "SELECT count(*) FROM "+schema+".marks WHERE mode = $1 AND n = 2", mode.String()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s: the aimed statement's row exists %d times, want once (it ran and committed)", mode, n)
		}
	}
}

// Aimed at a COPY, the cut comes while the server waits for the rows: the
// COPY fails and nothing of it is left.
func TestCutAfterCopy(t *testing.T) {
	t.Parallel()
	schema := pgtest.Schema(t)
	admin := pgtest.PoolN(t, 2)
	if _, err := admin.Exec(t.Context(), "CREATE TABLE "+schema+".rows (n int)"); err != nil {
		t.Fatal(err)
	}
	p, cfg := pgProxy(t)
	conn := connect(t, cfg)
	fired := p.CutAfter(func(sql string) bool { return strings.HasPrefix(strings.ToLower(sql), "copy ") })
	rows := make([][]any, 50_000)
	for i := range rows {
		rows[i] = []any{i}
	}
	if _, err := conn.CopyFrom(t.Context(), pgx.Identifier{schema, "rows"}, []string{"n"}, pgx.CopyFromRows(rows)); err == nil {
		t.Fatal("the COPY succeeded")
	}
	select {
	case <-fired:
	default:
		t.Fatal("the COPY failed but the cut did not fire")
	}
	var n int
	if err := admin.QueryRow(t.Context(), "SELECT count(*) FROM "+schema+".rows").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d rows of the cut COPY are in the table", n)
	}
}

// Delay slows every round trip by about twice the delay, and Delay(0, 0)
// ends it.
func TestDelay(t *testing.T) {
	t.Parallel()
	p, cfg := pgProxy(t)
	conn := connect(t, cfg)
	p.Delay(100*time.Millisecond, 50*time.Millisecond)
	for range 3 {
		took, err := query(conn, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// One read each way, each delayed 50ms to 150ms.
		if took < 100*time.Millisecond {
			t.Errorf("a round trip took %s with 100ms ± 50ms each way", took)
		}
	}
	p.Delay(0, 0)
	var fastest time.Duration = time.Hour
	for range 5 {
		took, err := query(conn, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fastest = min(fastest, took)
	}
	if fastest >= 100*time.Millisecond {
		t.Errorf("the fastest of 5 round trips after Delay(0, 0) took %s", fastest)
	}
}
