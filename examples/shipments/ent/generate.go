// Package ent is the generated Ent client of the shipments example.
package ent

//go:generate go run entc.go
