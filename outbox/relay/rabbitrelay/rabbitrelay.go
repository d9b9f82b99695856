// Package rabbitrelay is the outbox relay's publisher for RabbitMQ
// (github.com/rabbitmq/amqp091-go): publisher confirms, persistent
// delivery, the event id as message_id, and mandatory routing, so that a
// message no queue would take is refused, not dropped.
//
// Each message goes to Config.Exchange with the event's topic as its
// routing key (Config.RoutingKeys maps topics otherwise); its headers and
// the relay's Docket-Key and Docket-Seq travel as AMQP headers. A broker
// that cannot be reached, a connection or channel that closes, and a nack
// are transient: the relay backs off and publishes again. A message the
// broker returns as unroutable, or one refused because the exchange does
// not exist, is permanent (relay.Permanent), so the relay dead-letters it
// after its attempts. RabbitMQ keeps no de-duplication window: consumers
// de-duplicate by message_id (outbox.Client.Inbox).
package rabbitrelay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/docketq/docket/outbox/relay"
)

// Config configures a Publisher.
type Config struct {
	// URL is the broker, amqp://user:password@host:port/vhost. Required.
	URL string
	// Exchange receives every message. Empty means the default exchange,
	// which routes a message to the queue named by its routing key.
	Exchange string
	// RoutingKeys maps a topic to the routing key it is published with;
	// a topic it does not name is its own routing key.
	RoutingKeys map[string]string
	// ConfirmTimeout bounds the wait for the broker's confirmation of a
	// batch. Zero means 5s.
	ConfirmTimeout time.Duration
}

// Publisher publishes to RabbitMQ with publisher confirms. It dials on
// first use and again after the connection or channel is lost. Its
// methods are safe for concurrent use; batches are published one at a
// time.
type Publisher struct {
	cfg Config

	mu      sync.Mutex
	conn    *amqp.Connection
	ch      *amqp.Channel
	returns chan amqp.Return // of ch: unroutable messages
	closed  chan *amqp.Error // of ch: why the broker closed it
}

// maxReturns bounds the returns one batch may have: the channel's reader
// blocks when the buffer is full, so it holds more than a relay batch.
const maxReturns = 4096

// New returns a Publisher for cfg. It does not connect.
func New(cfg Config) (*Publisher, error) {
	if cfg.URL == "" {
		return nil, errors.New("rabbitrelay: Config needs URL")
	}
	if _, err := amqp.ParseURI(cfg.URL); err != nil {
		return nil, fmt.Errorf("rabbitrelay: %w", err)
	}
	if cfg.ConfirmTimeout <= 0 {
		cfg.ConfirmTimeout = 5 * time.Second
	}
	return &Publisher{cfg: cfg}, nil
}

// RoutingKey returns the routing key a topic is published with.
func (p *Publisher) RoutingKey(topic string) string {
	if k, ok := p.cfg.RoutingKeys[topic]; ok {
		return k
	}
	return topic
}

// channel returns the open confirm-mode channel, dialing when there is
// none.
func (p *Publisher) channel() (*amqp.Channel, error) {
	if p.ch != nil && !p.ch.IsClosed() && p.conn != nil && !p.conn.IsClosed() {
		return p.ch, nil
	}
	p.closeLocked()
	conn, err := amqp.Dial(p.cfg.URL)
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = conn.Close()
		return nil, err
	}
	// A return reaches its channel before the confirmation of the message
	// it returns, so once a batch is confirmed its returns are buffered.
	p.returns = ch.NotifyReturn(make(chan amqp.Return, maxReturns))
	p.closed = ch.NotifyClose(make(chan *amqp.Error, 1))
	p.conn, p.ch = conn, ch
	return ch, nil
}

// Publish sends msgs, all at once, and waits for the broker to confirm
// each. See relay.Publisher.
func (p *Publisher) Publish(ctx context.Context, msgs []relay.Message) []error {
	errs := make([]error, len(msgs))
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, err := p.channel()
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("rabbitrelay: connect: %w", err)
		}
		return errs
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.ConfirmTimeout)
	defer cancel()
	confirms := make([]*amqp.DeferredConfirmation, len(msgs))
	for i, m := range msgs {
		headers := amqp.Table{}
		for k, v := range m.Headers {
			headers[k] = v
		}
		confirms[i], err = ch.PublishWithDeferredConfirmWithContext(cctx, p.cfg.Exchange, p.RoutingKey(m.Topic), true, false, amqp.Publishing{
			MessageId: m.ID, DeliveryMode: amqp.Persistent, Timestamp: m.CreatedAt, Headers: headers, Body: m.Payload,
		})
		if err != nil {
			errs[i] = p.classify(m, err)
		}
	}
	for i, dc := range confirms {
		if dc == nil {
			continue
		}
		acked, err := dc.WaitContext(cctx)
		switch {
		case err != nil:
			errs[i] = p.classify(msgs[i], err)
		case !acked:
			errs[i] = fmt.Errorf("rabbitrelay: message %s: the broker nacked it", msgs[i].ID)
		}
	}
	returned := map[string]string{}
drain:
	for {
		select {
		case r, ok := <-p.returns:
			if !ok { // closed with the channel
				break drain
			}
			returned[r.MessageId] = fmt.Sprintf("%d %s", r.ReplyCode, r.ReplyText)
		default:
			break drain
		}
	}
	var closedBy *amqp.Error
	select {
	case closedBy = <-p.closed:
	default:
	}
	for i, m := range msgs {
		switch why, ok := returned[m.ID]; {
		case ok && errs[i] == nil:
			errs[i] = relay.Permanent(fmt.Errorf("rabbitrelay: message %s to %q: returned unroutable: %s", m.ID, p.RoutingKey(m.Topic), why))
		case closedBy != nil && (errs[i] != nil || confirms[i] == nil || !confirms[i].Acked()):
			// The broker closed the channel (a missing exchange closes it
			// with 404): what it did not confirm failed for that reason.
			errs[i] = p.classify(m, closedBy)
		}
	}
	return errs
}

// classify wraps the refusals the broker will repeat with relay.Permanent.
// A missing exchange closes the channel with 404 NOT_FOUND; the next
// Publish opens another.
func (p *Publisher) classify(m relay.Message, err error) error {
	err = fmt.Errorf("rabbitrelay: message %s to exchange %q: %w", m.ID, p.cfg.Exchange, err)
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound {
		return relay.Permanent(err)
	}
	return err
}

// Close closes the connection.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked()
	return nil
}

func (p *Publisher) closeLocked() {
	if p.conn != nil {
		_ = p.conn.Close()
	}
	p.conn, p.ch, p.returns, p.closed = nil, nil, nil, nil
}
