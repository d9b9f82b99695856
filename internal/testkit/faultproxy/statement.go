package faultproxy

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
)

// statementCut is a cut armed by CutAfter. Its fields are guarded by
// Proxy.mu.
type statementCut struct {
	match func(sql string) bool
	fired chan string
	on    *wire  // the connection whose statement matched; nil until one did
	sql   string // that statement
}

// CutAfter arms a cut aimed at one statement. The next time a client of
// the proxy runs a statement whose SQL satisfies match, the proxy forwards
// it, and when the server then says that it ran it (ReadyForQuery: the
// statement is done and, outside a transaction block, committed) or that it
// waits for its COPY data (CopyInResponse), the proxy cuts every connection
// (as [Proxy.Cut]) instead of forwarding that answer. The server ran or
// began the statement; the client never learns how it ended.
//
// The returned channel receives the statement's SQL when the cut happens.
// The cut fires once; arming again replaces an arm that has not fired.
// match is called with the proxy's lock held and must not call the proxy.
//
// The proxy reads PostgreSQL's wire protocol for this: statements sent as
// a simple query, or executed (Bind) after a Parse on the same connection,
// named or not. Connections that negotiate TLS or GSS encryption are not
// read.
func (p *Proxy) CutAfter(match func(sql string) bool) <-chan string {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &statementCut{match: match, fired: make(chan string, 1)}
	p.armed = c
	return c.fired
}

// Message types and startup codes of PostgreSQL's protocol that CutAfter
// reads.
const (
	msgParse       = 'P'
	msgBind        = 'B'
	msgQuery       = 'Q'
	msgReady       = 'Z'
	msgCopyIn      = 'G'
	codeSSLRequest = 80877103
	codeGSSRequest = 80877104
	maxKept        = 64 << 10 // bytes of a message body kept for reading
)

// wire follows both directions of one connection's PostgreSQL protocol.
// Each direction is read by one goroutine only; what the two share is
// atomic.
type wire struct {
	p           *Proxy
	front, back framer
	statements  map[string]string // prepared statement name -> SQL; front only
	encAsked    atomic.Int32      // SSL/GSS requests the server has yet to answer
	opaque      atomic.Bool       // encrypted: nothing more is read
	pending     atomic.Bool       // an armed statement ran here; cut at its answer
}

func newWire(p *Proxy) *wire {
	return &wire{p: p, front: framer{untyped: true}, statements: map[string]string{}}
}

// read follows b, the bytes just read from the client (fromClient) or the
// server, and reports whether the proxy must cut instead of forwarding them.
func (w *wire) read(fromClient bool, b []byte) bool {
	if w.opaque.Load() {
		return false
	}
	if fromClient {
		w.front.feed(b, w.frontMessage)
		return false
	}
	for len(b) > 0 && w.back.atBoundary() && w.encAsked.Load() > 0 {
		// The one-byte answer to an SSL or GSS request.
		w.encAsked.Add(-1)
		if b[0] == 'S' || b[0] == 'G' {
			w.opaque.Store(true)
			return false
		}
		b = b[1:]
	}
	cut := false
	w.back.feed(b, func(typ byte, _ []byte) {
		if (typ == msgReady || typ == msgCopyIn) && w.pending.Load() {
			cut = cut || w.fire()
		}
	})
	return cut
}

// frontMessage handles one message from the client.
func (w *wire) frontMessage(typ byte, body []byte) {
	if w.front.untyped {
		if len(body) < 4 {
			return
		}
		switch code := binary.BigEndian.Uint32(body); {
		case code == codeSSLRequest || code == codeGSSRequest:
			w.encAsked.Add(1)
		case code>>16 == 3: // a StartupMessage: typed messages follow
			w.front.untyped = false
		}
		return
	}
	var sql string
	switch typ {
	case msgParse:
		name, rest := cstring(body)
		q, _ := cstring(rest)
		w.statements[name] = q
		return
	case msgBind:
		_, rest := cstring(body)
		name, _ := cstring(rest)
		sql = w.statements[name]
	case msgQuery:
		sql, _ = cstring(body)
	default:
		return
	}
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if a := w.p.armed; a != nil && a.on == nil && a.match(sql) {
		a.on, a.sql = w, sql
		w.pending.Store(true)
	}
}

// fire ends the armed cut if it is this connection's, and reports whether
// it was.
func (w *wire) fire() bool {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	a := w.p.armed
	if a == nil || a.on != w {
		return false
	}
	w.p.armed = nil
	a.fired <- a.sql
	return true
}

// cstring splits b after its first NUL.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

// framer cuts one direction of the protocol into messages: a type byte
// (none during startup) and a length that counts itself, then the body.
type framer struct {
	untyped bool   // startup: messages have no type byte
	hdr     []byte // header bytes gathered so far
	left    int    // body bytes of the current message still to come
	inBody  bool
	typ     byte
	body    []byte // the current body, up to maxKept bytes
}

func (f *framer) atBoundary() bool { return !f.inBody && len(f.hdr) == 0 }

// feed passes each message that ends in b, with its kept body, to on.
func (f *framer) feed(b []byte, on func(typ byte, body []byte)) {
	for len(b) > 0 {
		if !f.inBody {
			size := 5
			if f.untyped {
				size = 4
			}
			take := min(size-len(f.hdr), len(b))
			f.hdr = append(f.hdr, b[:take]...)
			b = b[take:]
			if len(f.hdr) < size {
				return
			}
			f.typ = 0
			if !f.untyped {
				f.typ = f.hdr[0]
			}
			f.left = int(binary.BigEndian.Uint32(f.hdr[size-4:])) - 4
			f.hdr, f.body, f.inBody = f.hdr[:0], f.body[:0], true
			if f.left <= 0 {
				f.inBody = false
				on(f.typ, f.body)
				continue
			}
		}
		take := min(f.left, len(b))
		if keep := min(take, maxKept-len(f.body)); keep > 0 {
			f.body = append(f.body, b[:keep]...)
		}
		f.left -= take
		b = b[take:]
		if f.left <= 0 {
			f.inBody = false
			on(f.typ, f.body)
		}
	}
}
