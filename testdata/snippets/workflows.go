// The declarations docs/workflows.md's Go blocks assume: the service's
// client, a transaction, a registry and the jobs' args types.
package snippet

import (
	"context"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5"
)

var (
	ctx    context.Context
	tx     pgx.Tx
	client *docket.Client
	reg    *handlers.Registry
)

type ResizeImage struct {
	Size int `json:"size"`
}

func (ResizeImage) Kind() string { return "resize_image" }

type PublishAlbum struct{}

func (PublishAlbum) Kind() string { return "publish_album" }

type Report struct{}

func (Report) Kind() string { return "report" }

type NightlyReport struct {
	Day string `json:"day"`
}

func (NightlyReport) Kind() string { return "nightly_report" }

type Extract struct {
	Day string `json:"day"`
}

func (Extract) Kind() string { return "extract" }

type Load struct {
	Day string `json:"day"`
}

func (Load) Kind() string { return "load" }

type ReserveStock struct {
	Order int64 `json:"order"`
}

func (ReserveStock) Kind() string { return "reserve_stock" }

type ShipOrder struct {
	Order int64 `json:"order"`
}

func (ShipOrder) Kind() string { return "ship_order" }

type AskForReview struct {
	Order int64 `json:"order"`
}

func (AskForReview) Kind() string { return "ask_for_review" }

type Payment struct {
	Amount int64  `json:"amount"`
	Ref    string `json:"ref"`
}

var workflowID int64

type PackOrder struct {
	Order string   `json:"order"`
	Items []string `json:"items"`
}

func (PackOrder) Kind() string { return "pack_order" }

type PackItem struct {
	Order string `json:"order"`
	Item  string `json:"item"`
}

func (PackItem) Kind() string { return "pack_item" }
