package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketq/docket/handlers"
)

type SendReceipt struct {
	OrderID int64 `json:"order_id"`
}

func (SendReceipt) Kind() string { return "send_receipt" }

var errMailboxFull = errors.New("mailbox full")

func ExampleRegister() {
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error {
		switch {
		case job.Args.OrderID == 0:
			return handlers.Cancel(errors.New("no order")) // retrying cannot help
		case job.Attempt < 3:
			return handlers.RetryAfter(time.Minute, errMailboxFull)
		}
		return nil // complete
	}, handlers.KindOpts{Queue: "mail", MaxAttempts: 10, Timeout: 30 * time.Second})

	err := handlers.Register(reg, func(ctx context.Context, job *handlers.Job[SendReceipt]) error { return nil }, handlers.KindOpts{})
	fmt.Println(reg.Kinds())
	fmt.Println(errors.Is(err, handlers.ErrDuplicateKind))
	// Output:
	// [send_receipt]
	// true
}
