package docket_test

import (
	"os"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/freshmod"
)

// The README's quick start is a whole program: it compiles in a fresh
// module that requires Docket, with the imports the README lists.
func TestREADMEQuickStartCompiles(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## Quick start")
	if !ok {
		t.Fatal("README has no Quick start section")
	}
	_, code, ok := strings.Cut(after, "```go\n")
	if !ok {
		t.Fatal("Quick start has no Go block")
	}
	code, _, ok = strings.Cut(code, "```")
	if !ok {
		t.Fatal("Quick start's Go block is not closed")
	}
	src := `package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

` + code
	if out, err := freshmod.Build(t, map[string]string{"main.go": src}); err != nil {
		t.Fatalf("README quick start does not compile: %v\n%s", err, out)
	}
}
