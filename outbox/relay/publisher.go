package relay

import (
	"context"
	"errors"
	"time"
)

// Message is one committed event as the relay hands it to a broker.
type Message struct {
	// ID is the event's stable id. Brokers that de-duplicate use it as the
	// de-duplication id, and consumers record it in their inbox.
	ID string
	// Topic names the destination; each broker package says how a topic
	// maps to a subject, a Kafka topic or an exchange and routing key.
	Topic string
	// Key orders messages: the relay hands messages of one key to a
	// Publisher in commit order. Empty means no order is required.
	Key string
	// Payload is the event's body, passed to the broker unchanged.
	Payload []byte
	// Headers are passed to the broker as message headers.
	Headers map[string]string
	// CreatedAt is when the event was written.
	CreatedAt time.Time
}

// Publisher delivers messages to a broker. The relay calls Publish from one
// goroutine at a time per Publisher.
type Publisher interface {
	// Publish sends msgs in slice order and waits until the broker has
	// acknowledged or refused each one. It returns a slice as long as msgs:
	// nil where the broker acknowledged the message, an error where it did
	// not. An error wrapped by Permanent means the broker will refuse the
	// message again (too large, no such destination); any other error is
	// retried. Publish may pipeline messages, but must not reorder messages
	// of one key.
	Publish(ctx context.Context, msgs []Message) []error
	// Close releases the broker connection.
	Close() error
}

// permanentError marks a broker refusal that retrying will not change.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent wraps err to say the broker will refuse the message again, so
// the relay dead-letters it instead of retrying it. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, came from
// Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
