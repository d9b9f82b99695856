//go:build ignore

// entc.go generates the test Ent client from ./schema. Run it with go generate.
package main

import (
	"log"
	"runtime"

	"entgo.io/ent/entc"
	"entgo.io/ent/entc/gen"
)

func main() {
	// Ent formats the generated files in parallel, and goimports resolves
	// "ent." from the imports of sibling files, which a parallel format may
	// be rewriting at that moment; it then picks another package named ent
	// from this module. One file at a time keeps the output reproducible.
	runtime.GOMAXPROCS(1)
	err := entc.Generate("./schema", &gen.Config{
		Target:   ".",
		Package:  "github.com/docketq/docket/ent/internal/testent",
		Features: []gen.Feature{gen.FeatureExecQuery},
	})
	if err != nil {
		log.Fatal(err)
	}
}
