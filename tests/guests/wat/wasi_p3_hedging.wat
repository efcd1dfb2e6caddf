;; The core of a policy that hedges and imports WASI 0.3's async `wait-for`: a host that calls
;; such a component on a fiber only for the world `retry-policy` refuses it at load, so none of
;; its functions is ever called. Built with its world (wasi_p3_hedging.wit).
(module
  (import "cm32p2|wasi:clocks/monotonic-clock@0.3" "wait-for" (func (param i64)))
  (memory 1)
  (export "cm32p2_memory" (memory 0))
  (func (export "cm32p2|rebound:policy/hedging@0.6|next-copy")
    (param i32 i32 i32 i64 i64 i32 i32) (result i32) unreachable)
  (func (export "cm32p2|rebound:policy/hedging@0.6|next-copy_post") (param i32))
  (func (export "cm32p2|rebound:policy/hedging@0.6|is-fatal")
    (param i32 i32 i32 i32 i32 i32 i32) (result i32) unreachable)
  (func (export "cm32p2|rebound:policy/hedging@0.6|is-fatal_post") (param i32))
  (func (export "cm32p2|rebound:policy/strategy@0.6|configure")
    (param i32 i32) (result i32) unreachable)
  (func (export "cm32p2|rebound:policy/strategy@0.6|configure_post") (param i32))
  (func (export "cm32p2|rebound:policy/strategy@0.6|retry-after")
    (param i32 i32 i32 i32 i32 i32 i32) (result i32) unreachable)
  (func (export "cm32p2|rebound:policy/strategy@0.6|retry-after_post") (param i32))
  (func (export "cm32p2_realloc") (param i32 i32 i32 i32) (result i32) unreachable)
)
