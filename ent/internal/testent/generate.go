// Package testent is the generated Ent client of package ent's tests.
package testent

//go:generate go run entc.go
