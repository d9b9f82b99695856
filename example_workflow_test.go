package docket_test

import (
	"context"
	"fmt"
	"log"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
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
	m, err := migrate.New("example_workflow")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		log.Fatal(err)
	}
	defer pool.Exec(ctx, `DROP SCHEMA example_workflow CASCADE`)
	client, err := docket.NewClient(pool, docket.Config{Schema: "example_workflow"})
	if err != nil {
		log.Fatal(err)
	}

	w := docket.Workflow{Name: "album 42", Jobs: []docket.WorkflowJob{
		{Ref: "small", Args: resizeImage{Size: 128}},
		{Ref: "medium", Args: resizeImage{Size: 512}},
		{Ref: "large", Args: resizeImage{Size: 2048}},
		{Ref: "publish", Args: publishAlbum{}, After: docket.After("small", "medium", "large")},
	}}
	res, err := client.EnqueueWorkflow(ctx, pool, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := client.Admin().Workflows().Status(ctx, pool, res.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Name, st.State, st.Jobs, "jobs")

	// A cycle is refused before anything is written.
	_, err = client.EnqueueWorkflow(ctx, pool, docket.Workflow{Name: "loop", Jobs: []docket.WorkflowJob{
		{Ref: "a", Args: publishAlbum{}, After: docket.After("b")},
		{Ref: "b", Args: publishAlbum{}, After: docket.After("a")},
	}})
	fmt.Println(err)
	// Output:
	// album 42 running 4 jobs
	// docket: invalid workflow "loop": cycle b -> a -> b
}
