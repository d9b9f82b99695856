// Package natsrelay is the relay's Publisher for NATS JetStream.
//
// Each message is published to the subject its topic maps to (Config.Subjects,
// else the topic itself) with Nats-Msg-Id set to the event's id, so a stream's
// duplicate window drops a message the relay publishes twice. Its headers,
// a W3C traceparent among them, go as NATS headers. Messages are published
// asynchronously, at most Config.MaxPending awaiting their acknowledgement.
//
// Refusals the broker will repeat are reported as permanent (relay.Permanent):
// no stream captures the subject, the message is larger than the server's or
// the stream's limit, or the subject is invalid. Anything else (disconnected,
// timed out) is transient: the relay retries it.
package natsrelay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketq/docket/outbox/relay"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config configures a Publisher. URL or Conn is required.
type Config struct {
	// URL is the NATS server URL, used when Conn is nil.
	URL string
	// Conn is an open connection to use instead of URL; the Publisher does
	// not close it.
	Conn *nats.Conn
	// Options are extra options for connecting to URL (credentials, TLS).
	Options []nats.Option
	// Subjects maps topics to subjects; a topic not in it is its own
	// subject.
	Subjects map[string]string
	// MaxPending is the most messages awaiting an acknowledgement at once.
	// Zero means 256.
	MaxPending int
	// AckTimeout is how long to wait for one acknowledgement. Zero means 5s.
	AckTimeout time.Duration
}

// Publisher publishes relay messages to JetStream.
type Publisher struct {
	cfg   Config
	nc    *nats.Conn
	own   bool
	js    jetstream.JetStream
	ackTO time.Duration
}

var _ relay.Publisher = (*Publisher)(nil)

// New connects (when Config.URL is used) and returns a Publisher. The
// connection reconnects forever and buffers nothing while disconnected, so
// that a publish during an outage fails at once and is retried by the relay
// in order, instead of reaching the server later out of order.
func New(cfg Config) (*Publisher, error) {
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 256
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = 5 * time.Second
	}
	p := &Publisher{cfg: cfg, nc: cfg.Conn, ackTO: cfg.AckTimeout}
	if p.nc == nil {
		if cfg.URL == "" {
			return nil, errors.New("natsrelay: Config needs URL or Conn")
		}
		opts := append([]nats.Option{
			nats.Name("docket-relay"), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
			nats.ReconnectBufSize(-1), nats.RetryOnFailedConnect(true),
		}, cfg.Options...)
		nc, err := nats.Connect(cfg.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("natsrelay: connect %s: %w", cfg.URL, err)
		}
		p.nc, p.own = nc, true
	}
	js, err := jetstream.New(p.nc, jetstream.WithPublishAsyncMaxPending(cfg.MaxPending), jetstream.WithPublishAsyncTimeout(cfg.AckTimeout))
	if err != nil {
		if p.own {
			p.nc.Close()
		}
		return nil, err
	}
	p.js = js
	return p, nil
}

// Subject returns the subject a topic is published to.
func (p *Publisher) Subject(topic string) string {
	if s, ok := p.cfg.Subjects[topic]; ok {
		return s
	}
	return topic
}

// Publish sends msgs asynchronously, at most MaxPending unacknowledged, and
// waits for every acknowledgement. See relay.Publisher.
func (p *Publisher) Publish(ctx context.Context, msgs []relay.Message) []error {
	errs := make([]error, len(msgs))
	futures := make([]jetstream.PubAckFuture, len(msgs))
	waited := 0
	wait := func(i int) {
		f := futures[i]
		if f == nil {
			return
		}
		select {
		case <-f.Ok():
		case err := <-f.Err():
			errs[i] = p.classify(ctx, msgs[i], err)
		case <-ctx.Done():
			errs[i] = ctx.Err()
		}
	}
	for i, m := range msgs {
		for i-waited >= p.cfg.MaxPending {
			wait(waited)
			waited++
		}
		nm := &nats.Msg{Subject: p.Subject(m.Topic), Data: m.Payload, Header: nats.Header{}}
		for k, v := range m.Headers {
			nm.Header.Set(k, v)
		}
		f, err := p.js.PublishMsgAsync(nm, jetstream.WithMsgID(m.ID))
		if err != nil {
			errs[i] = p.classify(ctx, m, err)
			continue
		}
		futures[i] = f
	}
	for ; waited < len(msgs); waited++ {
		wait(waited)
	}
	return errs
}

// classify wraps the refusals the broker will repeat with relay.Permanent.
func (p *Publisher) classify(ctx context.Context, m relay.Message, err error) error {
	err = fmt.Errorf("natsrelay: message %s to %s: %w", m.ID, p.Subject(m.Topic), err)
	var api *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject), errors.Is(err, nats.ErrInvalidMsg):
		return relay.Permanent(err)
	case errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum || api.ErrorCode == jetstream.JSErrCodeStreamNotFound):
		return relay.Permanent(err)
	case errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders):
		// No stream answered: permanent only if the server confirms that
		// no stream captures the subject. A stream recovering after a
		// restart also stays silent, and that must be retried.
		cctx, cancel := context.WithTimeout(ctx, p.ackTO)
		defer cancel()
		if _, lerr := p.js.StreamNameBySubject(cctx, p.Subject(m.Topic)); errors.Is(lerr, jetstream.ErrStreamNotFound) {
			return relay.Permanent(fmt.Errorf("%w: no stream for subject", err))
		}
	}
	return err
}

// Close closes the connection if the Publisher opened it.
func (p *Publisher) Close() error {
	if p.own {
		p.nc.Close()
	}
	return nil
}
