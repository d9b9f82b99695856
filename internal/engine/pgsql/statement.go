package pgsql

import "sync"

// Statement is SQL written beside the code that runs it, with {{schema}}
// where the quoted schema goes. For renders it for a schema, once per
// schema: a package declares its statements as variables and runs
// stmt.For(schema), so adding a statement is one edit.
type Statement struct {
	text     string
	rendered sync.Map // schema name → text for it
}

// SQL returns the statement of text, which may hold {{schema}}.
func SQL(text string) *Statement { return &Statement{text: text} }

// For returns the statement's text for schema, a valid schema name (see
// Schema).
func (s *Statement) For(schema string) string {
	if v, ok := s.rendered.Load(schema); ok {
		return v.(string)
	}
	r := Render(s.text, schema)
	s.rendered.Store(schema, r)
	return r
}

// Text returns the statement as written, with {{schema}}.
func (s *Statement) Text() string { return s.text }
