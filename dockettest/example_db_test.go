package dockettest_test

import (
	"context"
	"fmt"

	"github.com/docketq/docket"
	"github.com/docketq/docket/dockettest"
)

// A test gets its own migrated schema, a pool pointed at it and a client
// of that schema; all of it goes away when the test ends.
func ExampleNewDB() {
	t := &exampleT{} // in a test: the test's *testing.T
	defer t.done()

	db := dockettest.NewDB(t)
	ctx := context.Background()
	if _, err := db.Client.Enqueue(ctx, db.Pool, EmailArgs{To: "ada@example.com"}, docket.Opts{}); err != nil {
		panic(err)
	}
	var n int
	// The pool's search_path is the test's schema.
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM docket_jobs`).Scan(&n); err != nil {
		panic(err)
	}
	fmt.Println("jobs:", n)
	// Output:
	// jobs: 1
}
