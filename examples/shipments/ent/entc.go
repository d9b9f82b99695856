//go:build ignore

// entc.go generates the example's Ent package from ./schema. Run it with go
// generate. The sql/execquery feature is what Docket needs: it gives the
// client and its Tx ExecContext and QueryContext.
package main

import (
	"log"

	"entgo.io/ent/entc"
	"entgo.io/ent/entc/gen"
)

func main() {
	err := entc.Generate("./schema", &gen.Config{
		Target:   ".",
		Package:  "github.com/docketq/docket/examples/shipments/ent",
		Features: []gen.Feature{gen.FeatureExecQuery},
	})
	if err != nil {
		log.Fatal(err)
	}
}
