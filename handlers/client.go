package handlers

import (
	"context"
	"slices"

	docket "github.com/docketq/docket/internal/core"
	"github.com/docketq/docket/outbox"
)

// Client enqueues jobs with the defaults their kind was registered with:
// when neither the enqueue options nor the args' own Opts (outbox.
// OptsProvider) name a queue or a max attempts, the kind's KindOpts.Queue
// and KindOpts.MaxAttempts are used. Kinds not in the registry are enqueued
// as they are (another service may run them). A Client is safe for
// concurrent use.
type Client struct {
	ob  *outbox.Client
	reg *Registry
}

// NewClient returns a Client that enqueues through ob with the kinds of reg.
func NewClient(ob *outbox.Client, reg *Registry) *Client { return &Client{ob: ob, reg: reg} }

// Outbox returns the underlying outbox client.
func (c *Client) Outbox() *outbox.Client { return c.ob }

// Enqueue is outbox.Client.Enqueue with the kind's registered defaults.
// Pass the caller's transaction as db to commit the job with the caller's
// writes.
func (c *Client) Enqueue(ctx context.Context, db outbox.DB, args docket.Args, opts outbox.Opts) (outbox.Enqueued, error) {
	return c.ob.Enqueue(ctx, db, args, c.defaults(args, opts))
}

// EnqueueMany is outbox.Client.EnqueueMany with each kind's registered
// defaults. items is not modified.
func (c *Client) EnqueueMany(ctx context.Context, db outbox.DB, items []outbox.Item) ([]outbox.Enqueued, error) {
	items = slices.Clone(items)
	for i := range items {
		items[i].Opts = c.defaults(items[i].Args, items[i].Opts)
	}
	return c.ob.EnqueueMany(ctx, db, items)
}

func (c *Client) defaults(args docket.Args, opts outbox.Opts) outbox.Opts {
	if args == nil {
		return opts // outbox reports it
	}
	k := c.reg.lookup(args.Kind())
	if k == nil {
		return opts
	}
	var own outbox.Opts
	if p, ok := args.(outbox.OptsProvider); ok {
		own = p.Opts()
	}
	if opts.Queue == "" && own.Queue == "" {
		opts.Queue = k.opts.Queue
	}
	if opts.MaxAttempts == 0 && own.MaxAttempts == 0 {
		opts.MaxAttempts = k.opts.MaxAttempts
	}
	return opts
}
