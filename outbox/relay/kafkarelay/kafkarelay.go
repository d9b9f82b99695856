// Package kafkarelay is the outbox relay's publisher for Kafka
// (github.com/twmb/franz-go): an idempotent producer that waits for every
// record's acknowledgement by all in-sync replicas, the event key as the
// record key, so that a key's events land on one partition in commit
// order, and the event id in the Docket-Id header.
//
// The event's topic is the Kafka topic (Config.Topics maps topics
// otherwise); its headers and the relay's Docket-Key and Docket-Seq travel
// as record headers. A record the broker or the client refuses for its
// size, an invalid topic name or a topic the producer may not write is
// refused for good (relay.Permanent), so the relay dead-letters it after
// its attempts; everything else (a broker down, a leader moving, a topic
// not created yet) is transient, retried by the relay with backoff. Kafka
// keeps no de-duplication window across producer sessions: consumers
// de-duplicate by Docket-Id (outbox.Client.Inbox).
package kafkarelay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/docketq/docket/outbox/relay"
)

// HeaderID is the record header that carries the event's id.
const HeaderID = "Docket-Id"

// Config configures a Publisher.
type Config struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// Topics maps an event topic to the Kafka topic it is produced to; a
	// topic it does not name is used as it is.
	Topics map[string]string
	// Options are more franz-go client options (TLS, SASL, timeouts).
	// Keep the producer idempotent (franz-go's default): a key's order
	// under retries rests on it.
	Options []kgo.Opt
}

// Publisher produces to Kafka. Safe for concurrent use.
type Publisher struct {
	cfg Config
	cl  *kgo.Client
}

// New returns a Publisher for cfg. The client connects lazily.
func New(cfg Config) (*Publisher, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("kafkarelay: Config needs Brokers")
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID("docket-relay")}, cfg.Options...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkarelay: %w", err)
	}
	return &Publisher{cfg: cfg, cl: cl}, nil
}

// Topic returns the Kafka topic an event topic is produced to.
func (p *Publisher) Topic(topic string) string {
	if t, ok := p.cfg.Topics[topic]; ok {
		return t
	}
	return topic
}

// Publish produces msgs and waits for every acknowledgement; ctx bounds
// the wait. See relay.Publisher.
func (p *Publisher) Publish(ctx context.Context, msgs []relay.Message) []error {
	records := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		r := &kgo.Record{Topic: p.Topic(m.Topic), Value: m.Payload, Timestamp: m.CreatedAt}
		if m.Key != "" {
			r.Key = []byte(m.Key)
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderID, Value: []byte(m.ID)})
		for k, v := range m.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		records[i] = r
	}
	// Once buffered, franz-go delivers a record until it is acknowledged or
	// aborted, whatever the context: when ctx ends first (the broker is
	// down and the relay's round is out of time), the buffered records are
	// aborted, so that none of them lands after a later round's record of
	// the same key.
	done := make(chan kgo.ProduceResults, 1)
	go func() { done <- p.cl.ProduceSync(context.WithoutCancel(ctx), records...) }()
	var results kgo.ProduceResults
	select {
	case results = <-done:
	case <-ctx.Done():
		actx, cancel := context.WithTimeout(context.Background(), abortWait)
		err := p.cl.AbortBufferedRecords(actx)
		cancel()
		select {
		case results = <-done:
		case <-time.After(abortWait):
			err = errors.Join(err, errors.New("records still in flight"))
		}
		if results == nil {
			errs := make([]error, len(msgs))
			for i, m := range msgs {
				errs[i] = fmt.Errorf("kafkarelay: message %s: %w (%v)", m.ID, ctx.Err(), err)
			}
			return errs
		}
	}
	errs := make([]error, len(msgs))
	for i, res := range results {
		if res.Err != nil {
			errs[i] = p.classify(msgs[i], res.Err)
		}
	}
	return errs
}

// abortWait bounds the wait for aborted records to come back.
const abortWait = 2 * time.Second

// classify wraps the refusals the broker will repeat with relay.Permanent.
func (p *Publisher) classify(m relay.Message, err error) error {
	err = fmt.Errorf("kafkarelay: message %s to %s: %w", m.ID, p.Topic(m.Topic), err)
	for _, permanent := range []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidTopicException,
		kerr.TopicAuthorizationFailed, kerr.InvalidRecord} {
		if errors.Is(err, permanent) {
			return relay.Permanent(err)
		}
	}
	return err
}

// Close flushes nothing (Publish waits for every record) and closes the
// client.
func (p *Publisher) Close() error {
	p.cl.Close()
	return nil
}
