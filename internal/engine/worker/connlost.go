package worker

import (
	"errors"
	"io"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// connLost reports whether a statement failed because the connection it
// ran on was closed under it (the server ended the session, as a restart
// does to every connection, or went away: the socket was closed or reset,
// as by a crashed server or a middlebox that dropped its state), not
// because the database could not be reached. A pool hands out a connection idle for under a second
// without checking it, so after a restart each pooled connection fails its
// first statement; pgxpool then discards it, and the next statement gets
// another connection or a new one.
func connLost(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return false // no connection: the database is not answering
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// admin_shutdown, crash_shutdown: the server ended the session.
		return pe.Code == "57P01" || pe.Code == "57P02"
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
