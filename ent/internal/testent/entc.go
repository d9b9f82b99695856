//go:build ignore

// entc.go generates the test Ent client from ./schema. Run it with go generate.
package main

import (
	"log"

	"entgo.io/ent/entc"
	"entgo.io/ent/entc/gen"
)

func main() {
	err := entc.Generate("./schema", &gen.Config{
		Target:   ".",
		Package:  "github.com/docketq/docket/ent/internal/testent",
		Features: []gen.Feature{gen.FeatureExecQuery},
	})
	if err != nil {
		log.Fatal(err)
	}
}
