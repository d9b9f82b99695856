// Package relay publishes committed outbox events to a message broker.
//
// A Publisher is the broker side: one small package per broker implements
// it, so an application compiles only the client it uses.
package relay
