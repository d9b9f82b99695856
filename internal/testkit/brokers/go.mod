module github.com/docketq/docket/internal/testkit/brokers

go 1.26.0

// Docket's modules come from this checkout (see go.work and
// docs/compatibility.md, "Modules").
replace (
	github.com/docketq/docket => ../../..
	github.com/docketq/docket/cmd/docket => ../../../cmd/docket
	github.com/docketq/docket/dashboard/browsertest => ../../../dashboard/browsertest
	github.com/docketq/docket/ent => ../../../ent
	github.com/docketq/docket/examples => ../../../examples
	github.com/docketq/docket/internal/tools => ../../../internal/tools
	github.com/docketq/docket/outbox/relay/kafkarelay => ../../../outbox/relay/kafkarelay
	github.com/docketq/docket/outbox/relay/natsrelay => ../../../outbox/relay/natsrelay
	github.com/docketq/docket/outbox/relay/rabbitrelay => ../../../outbox/relay/rabbitrelay
)

require (
	github.com/docketq/docket v0.0.0-00010101000000-000000000000
	github.com/nats-io/nats.go v1.55.0
	github.com/rabbitmq/amqp091-go v1.16.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)
