// Package types holds the WIT types wit-bindgen's Go bindings use: option, result, tuple and
// the unit type.
package types

// Unit is WIT's empty type, as in `result<_, string>`.
type Unit struct{}

// OptionNone and OptionSome are an Option's tags.
const (
	OptionNone uint8 = 0
	OptionSome uint8 = 1
)

// Option is WIT's `option<T>`.
type Option[T any] struct {
	isSome bool
	value  T
}

// Some is the option holding value.
func Some[T any](value T) Option[T] { return Option[T]{isSome: true, value: value} }

// None is the empty option.
func None[T any]() Option[T] { return Option[T]{} }

// Tag is OptionSome or OptionNone.
func (o Option[T]) Tag() uint8 {
	if o.isSome {
		return OptionSome
	}
	return OptionNone
}

// Some is the value of an OptionSome option; it panics on OptionNone.
func (o Option[T]) Some() T {
	if !o.isSome {
		panic("Some() of an empty option")
	}
	return o.value
}

// IsSome tells whether the option holds a value.
func (o Option[T]) IsSome() bool { return o.isSome }

// ResultOk and ResultErr are a Result's tags.
const (
	ResultOk  uint8 = 0
	ResultErr uint8 = 1
)

// Result is WIT's `result<T, E>`.
type Result[T any, E any] struct {
	isErr bool
	ok    T
	err   E
}

// Ok is the successful result value.
func Ok[T any, E any](value T) Result[T, E] { return Result[T, E]{ok: value} }

// Err is the failed result err.
func Err[T any, E any](err E) Result[T, E] { return Result[T, E]{isErr: true, err: err} }

// Tag is ResultOk or ResultErr.
func (r Result[T, E]) Tag() uint8 {
	if r.isErr {
		return ResultErr
	}
	return ResultOk
}

// Ok is the value of a ResultOk result; it panics on ResultErr.
func (r Result[T, E]) Ok() T {
	if r.isErr {
		panic("Ok() of a failed result")
	}
	return r.ok
}

// Err is the error of a ResultErr result; it panics on ResultOk.
func (r Result[T, E]) Err() E {
	if !r.isErr {
		panic("Err() of a successful result")
	}
	return r.err
}

// Tuple2 is WIT's `tuple<A, B>`.
type Tuple2[A any, B any] struct {
	F0 A
	F1 B
}
