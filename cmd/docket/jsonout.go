package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
	"unicode"
)

// writeJSON prints v as one JSON document in the CLI's convention, whatever
// package its type comes from: snake_case keys (a json tag wins), times in
// RFC 3339 UTC, durations as seconds, [] for a nil slice, {} for a nil map,
// and zero times, nil pointers and empty raw JSON left out. indent spreads it
// over lines for a reader; without it, it is one line (for a stream).
func writeJSON(out io.Writer, v any, indent bool) error {
	val, _ := jsonValue(reflect.ValueOf(v))
	enc := json.NewEncoder(out)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(val)
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	durationType  = reflect.TypeFor[time.Duration]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// jsonValue converts v to what encoding/json prints in the convention, and
// whether it is present at all (false: leave the field out).
func jsonValue(v reflect.Value) (any, bool) {
	if !v.IsValid() {
		return nil, false
	}
	switch t := v.Type(); {
	case t == timeType:
		at := v.Interface().(time.Time)
		if at.IsZero() {
			return nil, false
		}
		return at.UTC().Format(time.RFC3339Nano), true
	case t == durationType:
		return time.Duration(v.Int()).Seconds(), true
	case t == rawType:
		if v.Len() == 0 {
			return nil, false
		}
		return v.Interface(), true
	case v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface &&
		(t.Implements(marshalerType) || t.Implements(textType)):
		return v.Interface(), true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, false
		}
		return jsonValue(v.Elem())
	case reflect.Struct:
		var obj object
		obj.addFields(v)
		return obj, true
	case reflect.Slice, reflect.Array:
		list := make([]any, 0, v.Len())
		for i := range v.Len() {
			e, _ := jsonValue(v.Index(i))
			list = append(list, e)
		}
		return list, true
	case reflect.Map:
		m := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			if e, ok := jsonValue(it.Value()); ok {
				m[fmt.Sprint(it.Key().Interface())] = e
			}
		}
		return m, true
	}
	return v.Interface(), true
}

// object is a JSON object that keeps its fields in the struct's order.
type object []field

type field struct {
	key   string
	value any
}

// addFields adds a struct's exported fields; an embedded struct's fields
// join the outer object, as encoding/json does.
func (o *object) addFields(v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && name == "" && fv.Kind() == reflect.Struct {
			o.addFields(fv)
			continue
		}
		if strings.Contains(opts, "omitempty") && fv.IsZero() {
			continue
		}
		if name == "" {
			name = snakeCase(f.Name)
		}
		if val, ok := jsonValue(fv); ok {
			*o = append(*o, field{name, val})
		}
	}
}

// MarshalJSON writes the fields in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(f.key)
		val, err := json.Marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// snakeCase turns a Go field name into a JSON key: OldestDueAt is
// oldest_due_at, DLQSize dlq_size, ClaimP99 claim_p99, XIDAge xid_age.
func snakeCase(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			acronymEnd := unicode.IsUpper(r[i-1]) && i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || acronymEnd {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
