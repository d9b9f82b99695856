// Package schema defines Docket's tables as Ent schemas, so that Ent users
// can read jobs, history, dead letters and schedules with Ent's typed builders
// (dashboards, admin code). The generated client is package
// github.com/docketq/docket/ent/entgen.
//
// # Ownership
//
// Docket's migrator owns these tables: every schema carries entsql.Skip, so
// Ent's auto-migration never creates or alters them. Write jobs through
// Docket (docket.Client.Enqueue, or Enqueue in package
// github.com/docketq/docket/ent), never with Ent's create builders, so that
// validation, unique keys and NOTIFY apply.
//
// # Drift
//
// A test in package ent migrates a fresh schema with migrate.Migrator and
// compares the catalog's columns and indexes with these schemas, so the two
// cannot drift apart.
package schema
