package pgsql

import "encoding/json"

// MaxRowsDoc bounds the JSON text of the rows one set-based statement
// sends; a single row over it goes alone.
const MaxRowsDoc = 64 << 20

// JSONRows encodes rows as JSON arrays for statements that read them with
// json_to_recordset, and calls send with each array in turn. An array holds
// at most MaxRowsDoc bytes, or one row: PostgreSQL reads a statement's
// parameters in one protocol message of at most 1 GiB, and each row the
// callers send is checked to fit it. The arrays are read as json, not
// jsonb, so that only each row's jsonb columns (a payload, a meta) become
// jsonb, each within jsonb's limits on its own, not the whole array.
func JSONRows(rows []map[string]any, send func(doc string) error) error {
	var doc []byte
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if len(doc) > 0 && len(doc)+len(b)+2 > MaxRowsDoc {
			if err := send(string(append(doc, ']'))); err != nil {
				return err
			}
			doc = doc[:0]
		}
		if len(doc) == 0 {
			doc = append(doc, '[')
		} else {
			doc = append(doc, ',')
		}
		doc = append(doc, b...)
	}
	if len(doc) == 0 {
		return nil
	}
	return send(string(append(doc, ']')))
}
