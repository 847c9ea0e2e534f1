package sqlite

// reboxed boxes a column's value into an interface for database/sql, reusing the last
// box while the value stays the same: converting a string or a large integer to an
// interface allocates, once per row and column of a multi-row INSERT.
type reboxed[T comparable] struct {
	v     T
	boxed any
}

// of returns v boxed.
func (r *reboxed[T]) of(v T) any {
	if r.boxed == nil || r.v != v {
		r.v, r.boxed = v, v
	}
	return r.boxed
}
