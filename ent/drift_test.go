package ent_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	entgo "entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	entschema "entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"github.com/docketq/docket/ent/schema"
)

// model is an Ent schema of one of Docket's tables.
type model interface {
	Fields() []entgo.Field
	Indexes() []entgo.Index
	Mixin() []entgo.Mixin
	Annotations() []entschema.Annotation
}

// models are the Ent schemas of Docket's tables; hasPK tells whether the
// table has a primary key on its id column (all but the partitioned history).
var models = []struct {
	m     model
	hasPK bool
}{
	{schema.Job{}, true},
	{schema.DoneJob{}, false},
	{schema.DeadJob{}, true},
	{schema.Schedule{}, true},
}

// TestSchemaMatchesMigrations migrates a fresh schema with Docket's own
// migrator and checks that the catalog and the Ent schemas describe the same
// columns (name, type, nullability), indexes (full definition, including
// DESC columns, INCLUDE columns and partial predicates) and primary keys.
func TestSchemaMatchesMigrations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, mm := range models {
		ann := tableAnnotation(mm.m)
		table := ann.Table
		t.Run(table, func(t *testing.T) {
			if !ann.Skip {
				t.Errorf("schema of %s lacks entsql.Skip(): Ent's migration would try to own it", table)
			}
			// Columns.
			want := map[string]string{}
			for _, f := range fields(mm.m) {
				d := f.Descriptor()
				name := d.Name
				if d.StorageKey != "" {
					name = d.StorageKey
				}
				want[name] = fmt.Sprintf("%s null=%v", pgType(t, d), d.Optional)
			}
			got := map[string]string{}
			rows, err := b.pool.Query(t.Context(), `SELECT column_name, data_type, is_nullable = 'YES'
				FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`, b.schema, table)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var name, typ string
				var null bool
				if err := rows.Scan(&name, &typ, &null); err != nil {
					t.Fatal(err)
				}
				got[name] = fmt.Sprintf("%s null=%v", typ, null)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Fatalf("table %s.%s does not exist after migrating", b.schema, table)
			}
			compare(t, "column", got, want)

			// Indexes, as PostgreSQL prints their definitions.
			want = map[string]string{}
			for _, idx := range mm.m.Indexes() {
				d := idx.Descriptor()
				want[d.StorageKey] = indexDef(b.schema, table, d.StorageKey, d.Unique, d.Fields, d.Annotations)
			}
			got = map[string]string{}
			var pk []string
			rows, err = b.pool.Query(t.Context(), `SELECT i.indexname, i.indexdef, coalesce(x.indisprimary, false)
				FROM pg_indexes i
				LEFT JOIN pg_index x ON x.indexrelid = format('%I.%I', i.schemaname, i.indexname)::regclass
				WHERE i.schemaname = $1 AND i.tablename = $2`, b.schema, table)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var name, def string
				var primary bool
				if err := rows.Scan(&name, &def, &primary); err != nil {
					t.Fatal(err)
				}
				if primary {
					pk = append(pk, def)
					continue
				}
				// A partitioned table's index is printed ON ONLY the parent.
				got[name] = strings.Replace(def, " ON ONLY ", " ON ", 1)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			compare(t, "index", got, want)

			// Ent's id is the primary key (its column is the id field's
			// storage key); history has none, being partitioned.
			var wantPK []string
			if mm.hasPK {
				idCol := "id"
				for _, f := range fields(mm.m) {
					if d := f.Descriptor(); d.Name == "id" && d.StorageKey != "" {
						idCol = d.StorageKey
					}
				}
				wantPK = []string{fmt.Sprintf("CREATE UNIQUE INDEX %s_pkey ON %s.%s USING btree (%s)", table, b.schema, table, idCol)}
			}
			if !slices.Equal(pk, wantPK) {
				t.Errorf("primary key: catalog %q, Ent %q", pk, wantPK)
			}
		})
	}
}

// TestModelsCoverTables fails when a migration creates a job table (or the
// schedules table) that has no Ent schema.
func TestModelsCoverTables(t *testing.T) {
	t.Parallel()
	b := setup(t)
	modelled := map[string]bool{}
	for _, mm := range models {
		modelled[tableAnnotation(mm.m).Table] = true
	}
	rows, err := b.pool.Query(t.Context(), `SELECT relname FROM pg_class
		WHERE relnamespace = $1::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition
		AND (relname LIKE 'docket\_jobs%' OR relname = 'docket_schedules')`, b.schema)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !modelled[name] {
			t.Errorf("table %s has no Ent schema in ent/schema", name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func tableAnnotation(m model) entsql.Annotation {
	var merged entsql.Annotation
	for _, an := range m.Annotations() {
		if e, ok := an.(*entsql.Annotation); ok {
			if e.Table != "" {
				merged.Table = e.Table
			}
			merged.Skip = merged.Skip || e.Skip
		}
	}
	if merged.Table == "" {
		panic(fmt.Sprintf("%T has no entsql table annotation", m))
	}
	return merged
}

func fields(m model) []entgo.Field {
	var out []entgo.Field
	for _, mx := range m.Mixin() {
		out = append(out, mx.Fields()...)
	}
	return append(out, m.Fields()...)
}

// pgType is the column type Ent declares for a field, as
// information_schema.columns.data_type names it.
func pgType(t *testing.T, d *field.Descriptor) string {
	if s := d.SchemaType[dialect.Postgres]; s != "" {
		return s
	}
	switch d.Info.Type {
	case field.TypeInt64, field.TypeInt:
		return "bigint"
	case field.TypeInt32:
		return "integer"
	case field.TypeInt16:
		return "smallint"
	case field.TypeBool:
		return "boolean"
	case field.TypeTime:
		return "timestamp with time zone"
	case field.TypeJSON:
		return "jsonb"
	case field.TypeUUID:
		return "uuid"
	case field.TypeString, field.TypeEnum:
		return "character varying"
	}
	t.Fatalf("field %s: no PostgreSQL type for %s", d.Name, d.Info.Type)
	return ""
}

// indexDef renders an Ent index the way pg_indexes.indexdef prints it.
func indexDef(schema, table, name string, unique bool, cols []string, anns []entschema.Annotation) string {
	var desc map[string]bool
	var include []string
	where := ""
	for _, a := range anns {
		ia, ok := a.(*entsql.IndexAnnotation)
		if !ok {
			continue
		}
		if ia.Where != "" {
			where = ia.Where
		}
		include = append(include, ia.IncludeColumns...)
		for c, d := range ia.DescColumns {
			if desc == nil {
				desc = map[string]bool{}
			}
			desc[c] = d
		}
	}
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c
		if desc[c] {
			parts[i] += " DESC"
		}
	}
	var s strings.Builder
	s.WriteString("CREATE ")
	if unique {
		s.WriteString("UNIQUE ")
	}
	fmt.Fprintf(&s, "INDEX %s ON %s.%s USING btree (%s)", name, schema, table, strings.Join(parts, ", "))
	if len(include) > 0 {
		fmt.Fprintf(&s, " INCLUDE (%s)", strings.Join(include, ", "))
	}
	if where != "" {
		fmt.Fprintf(&s, " WHERE (%s)", where)
	}
	return s.String()
}

func compare(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s %s: in the Ent schema (%s), not in the migrations", what, k, want[k])
		case g != want[k]:
			t.Errorf("%s %s:\n\tmigrations: %s\n\tEnt schema: %s", what, k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s %s: in the migrations (%s), not in the Ent schema", what, k, got[k])
		}
	}
}
