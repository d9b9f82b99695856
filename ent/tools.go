//go:build tools

package ent

// The generators that go generate runs (entc.go files, built with the
// ignore tag) need entc's packages; this import keeps them, and what they
// import, in go.mod and go.sum when go mod tidy runs.
import _ "entgo.io/ent/entc/gen"
