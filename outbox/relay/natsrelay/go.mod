module github.com/docketq/docket/outbox/relay/natsrelay

go 1.26.0

// Docket's modules come from this checkout (see go.work and
// docs/compatibility.md, "Modules").
replace (
	github.com/docketq/docket => ../../..
	github.com/docketq/docket/cmd/docket => ../../../cmd/docket
	github.com/docketq/docket/dashboard/browsertest => ../../../dashboard/browsertest
	github.com/docketq/docket/ent => ../../../ent
	github.com/docketq/docket/examples => ../../../examples
	github.com/docketq/docket/internal/testkit/brokers => ../../../internal/testkit/brokers
	github.com/docketq/docket/internal/tools => ../../../internal/tools
	github.com/docketq/docket/outbox/relay/kafkarelay => ../../../outbox/relay/kafkarelay
	github.com/docketq/docket/outbox/relay/rabbitrelay => ../../../outbox/relay/rabbitrelay
)

require (
	github.com/docketq/docket v0.0.0-00010101000000-000000000000
	github.com/docketq/docket/internal/testkit/brokers v0.0.0-00010101000000-000000000000
	github.com/jackc/pgx/v5 v5.12.0
	github.com/nats-io/nats.go v1.55.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
