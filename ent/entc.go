//go:build ignore

// entc.go generates package entgen from ./schema. Run it with go generate.
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
		Target:   "./entgen",
		Package:  "github.com/docketq/docket/ent/entgen",
		Features: []gen.Feature{gen.FeatureExecQuery},
		Hooks:    []gen.Hook{dropSkippedIndexes},
	})
	if err != nil {
		log.Fatal(err)
	}
}

// dropSkippedIndexes works around Ent (v0.14): a schema annotated
// entsql.Skip() is left out of the generated migration tables, but its
// indexes are still added to them, and generation fails on the missing
// table. Indexes affect migrations only, and Docket's migrator owns these
// tables, so they are dropped from the graph; the schemas keep them, and the
// drift test in package ent reads them from there.
func dropSkippedIndexes(next gen.Generator) gen.Generator {
	return gen.GenerateFunc(func(g *gen.Graph) error {
		for _, n := range g.Nodes {
			if a := n.EntSQL(); a != nil && a.Skip {
				n.Indexes = nil
			}
		}
		return next.Generate(g)
	})
}
