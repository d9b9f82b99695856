package docket

import (
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Connection defaults applied by [ParsePoolConfig]. Without them a pgx pool
// waits up to 2 minutes for a connection to a server that stopped answering
// (every slot "constructing" for the whole outage), pings an idle
// connection with no deadline, and relies on the kernel to notice a dead
// peer, which by default takes from about 2 minutes (Go's keepalive) to
// about 15 minutes (Linux's retransmissions).
const (
	// DefaultConnectTimeout bounds one connection attempt: TCP connect, TLS
	// and authentication. A healthy server takes well under a second; 5 s
	// leaves room for a loaded one and still frees the pool's slot long
	// before a 30-second outage is over.
	DefaultConnectTimeout = 5 * time.Second

	// DefaultPingTimeout bounds the ping with which the pool checks a
	// connection that was idle for more than a second before handing it
	// out. A connection that does not answer within it is closed and
	// another one is tried. A ping is an empty statement: only a dead
	// network or a stalled server takes seconds to answer it.
	DefaultPingTimeout = 5 * time.Second
)

// ParsePoolConfig parses a connection string (a postgres:// URL or
// keyword/value pairs, as for [pgxpool.ParseConfig]) and applies Docket's
// defaults for networks that fail, so that a worker notices a server it can
// no longer reach within seconds instead of minutes:
//
//   - ConnConfig.ConnectTimeout is [DefaultConnectTimeout] (5 s), unless the
//     connection string has connect_timeout or the environment has
//     PGCONNECT_TIMEOUT: those are kept as they are, connect_timeout=0
//     (pgxpool's 2 minutes) included.
//   - ConnConfig.DialFunc is a zero [Dialer]'s: TCP keepalive probes after
//     10 s of silence, every 5 s, and on Linux a TCP user timeout of 25 s,
//     so a connection whose peer vanished fails after about 25 s whether it
//     was idle or waiting for an answer. Unix-domain sockets are dialed as
//     before.
//   - PingTimeout is [DefaultPingTimeout] (5 s), unless the connection
//     string has pool_ping_timeout.
//
// Everything else is pgxpool's. Override any default by changing the
// returned config before [pgxpool.NewWithConfig]: set
// ConnConfig.ConnectTimeout or PingTimeout (0 means no timeout), and
// ConnConfig.DialFunc to a [Dialer] of your own, such as
// docket.Dialer{UserTimeout: time.Minute}.DialContext, or to
// (&net.Dialer{}).DialContext for pgx's own dialer.
//
// No statement_timeout is set: transactional handlers run their own
// statements on these connections, and a long statement is not a dead
// connection. The peer's kernel acknowledges the bytes of a statement that
// runs for an hour, so neither keepalive nor the user timeout ends it. Set
// statement_timeout in the connection string or on the role if you want one.
//
// The worker's LISTEN connection is opened from the pool's ConnConfig and
// so has the same connect timeout and dialer. Behind PgBouncer these apply
// to the connections to PgBouncer; its connections to PostgreSQL follow its
// own settings.
func ParsePoolConfig(connString string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 && !connStringHas(connString, "connect_timeout") && os.Getenv("PGCONNECT_TIMEOUT") == "" {
		cc.ConnectTimeout = DefaultConnectTimeout
	}
	cc.DialFunc = Dialer{}.DialContext
	if cfg.PingTimeout == 0 && !connStringHas(connString, "pool_ping_timeout") {
		cfg.PingTimeout = DefaultPingTimeout
	}
	return cfg, nil
}

// connStringHas reports whether a connection string that pgx parsed sets
// key, in its query (URL form) or as a keyword (keyword/value form). It
// tells an explicit 0 from an absent setting, which the parsed config does
// not.
func connStringHas(connString, key string) bool {
	if scheme, rest, ok := strings.Cut(connString, "://"); ok && (scheme == "postgres" || scheme == "postgresql") {
		_, query, _ := strings.Cut(rest, "?")
		for param := range strings.SplitSeq(query, "&") {
			k, _, _ := strings.Cut(param, "=")
			if k, err := url.QueryUnescape(k); err == nil && k == key {
				return true
			}
		}
		return false
	}
	s := connString
	for {
		s = strings.TrimLeft(s, " \t\n\r\v\f")
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			return false
		}
		if strings.TrimSpace(k) == key {
			return true
		}
		s = skipValue(strings.TrimLeft(rest, " \t\n\r\v\f"))
	}
}

// skipValue returns what follows the value at the start of s in a
// keyword/value string: a value in single quotes, or one that ends at the
// first space, either with backslash escapes.
func skipValue(s string) string {
	quoted := strings.HasPrefix(s, "'")
	if quoted {
		s = s[1:]
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case quoted && s[i] == '\'':
			return s[i+1:]
		case !quoted && strings.IndexByte(" \t\n\r\v\f", s[i]) >= 0:
			return s[i:]
		}
	}
	return ""
}
