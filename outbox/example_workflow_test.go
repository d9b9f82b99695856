package outbox_test

import (
	"context"
	"fmt"
	"log"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
)

type resizeImage struct {
	Size int `json:"size"`
}

func (resizeImage) Kind() string { return "resize_image" }

type publishAlbum struct{}

func (publishAlbum) Kind() string { return "publish_album" }

// A fan-out and fan-in: three resizes run in parallel, the album is
// published once all three completed. A resize that dead-letters cancels
// the publish.
func ExampleClient_EnqueueWorkflow() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.ExampleURL()) // your application's pool
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	m, err := outbox.NewMigrator("example_workflow")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		log.Fatal(err)
	}
	defer pool.Exec(ctx, `DROP SCHEMA example_workflow CASCADE`)
	client, err := outbox.New(outbox.Config{Schema: "example_workflow"})
	if err != nil {
		log.Fatal(err)
	}

	w := outbox.Workflow{Name: "album 42", Jobs: []outbox.WorkflowJob{
		{Ref: "small", Args: resizeImage{Size: 128}},
		{Ref: "medium", Args: resizeImage{Size: 512}},
		{Ref: "large", Args: resizeImage{Size: 2048}},
		{Ref: "publish", Args: publishAlbum{}, After: outbox.After("small", "medium", "large")},
	}}
	res, err := client.EnqueueWorkflow(ctx, pool, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := client.WorkflowStatus(ctx, pool, res.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Name, st.State, st.Jobs, "jobs")

	// A cycle is refused before anything is written.
	_, err = client.EnqueueWorkflow(ctx, pool, outbox.Workflow{Name: "loop", Jobs: []outbox.WorkflowJob{
		{Ref: "a", Args: publishAlbum{}, After: outbox.After("b")},
		{Ref: "b", Args: publishAlbum{}, After: outbox.After("a")},
	}})
	fmt.Println(err)
	// Output:
	// album 42 running 4 jobs
	// docket: invalid workflow "loop": cycle b -> a -> b
}
