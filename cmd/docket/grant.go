package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

func migrateGrant(fs *flag.FlagSet) action {
	var db dbFlags
	db.register(fs)
	role := fs.String("role", "", "the application role to grant to (required)")
	printOnly := fs.Bool("print", false, "print the SQL instead of running it")
	return func(ctx context.Context, pos []string, out, _ io.Writer) error {
		if err := wantArgs(pos, 0, ""); err != nil {
			return err
		}
		if *role == "" {
			return fmt.Errorf("%w: --role is required", errUsage)
		}
		m, err := migrator(db.schema)
		if err != nil {
			return err
		}
		sql, err := m.GrantSQL(*role)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		if *printOnly {
			_, err := io.WriteString(out, sql)
			return err
		}
		pool, err := connect(ctx, db.url, 2, db.pgbouncer)
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := m.Grant(ctx, pool, *role); err != nil {
			return err
		}
		fmt.Fprintf(out, "granted role %s on schema %s (%d statements)\n", *role, db.schema, strings.Count(sql, ";\n"))
		return nil
	}
}
