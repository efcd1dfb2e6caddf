;; The core of a policy that imports WASI 0.3 interfaces (clocks, random, stdout: an async
;; function taking a stream among them) and answers `best-effort` to every failure. It calls
;; `wasi:random/random@0.3.0#get-random-u64` only for `kv-temporary-failure` and the async
;; `wasi:clocks/monotonic-clock@0.3.0#wait-for` only for `kv-sync-write-in-progress`, so that a
;; host that does not provide WASI 0.3 is seen to deny each call and to accept the imports; for
;; `kv-sync-write-re-commit-in-progress` it loops forever, for the sandbox's deadline to stop.
;; Built with its world (wasi_p3_probe.wit) by `wasm-tools component embed` and `new`.
(module
  (import "cm32p2|wasi:clocks/monotonic-clock@0.3" "now" (func $now (result i64)))
  (import "cm32p2|wasi:clocks/monotonic-clock@0.3" "wait-for" (func $wait-for (param i64)))
  (import "cm32p2|wasi:random/random@0.3" "get-random-u64" (func $random (result i64)))
  (import "cm32p2|wasi:cli/stdout@0.3" "write-via-stream" (func $write (param i32 i32)))
  (memory 1)
  (global $next (mut i32) (i32.const 2048))
  (export "cm32p2_memory" (memory 0))
  ;; configure: `ok` (a zeroed result).
  (func (export "cm32p2|rebound:policy/strategy@0.6|configure") (param i32 i32) (result i32)
    i32.const 1024
    i32.const 0
    i32.store8
    i32.const 1024)
  (func (export "cm32p2|rebound:policy/strategy@0.6|configure_post") (param i32))
  ;; retry-after: the reason's case comes first; `kv-temporary-failure` is case 9,
  ;; `kv-sync-write-in-progress` case 10, `kv-sync-write-re-commit-in-progress` case 11. The
  ;; answer is the retry-action case `best-effort` (5).
  (func (export "cm32p2|rebound:policy/strategy@0.6|retry-after")
    (param $case i32) (param i32 i32 i32 i32 i32 i32) (result i32)
    (if (i32.eq (local.get $case) (i32.const 9))
      (then (drop (call $random))))
    (if (i32.eq (local.get $case) (i32.const 10))
      (then (call $wait-for (i64.const 1))))
    (if (i32.eq (local.get $case) (i32.const 11))
      (then (loop $forever (br $forever))))
    i32.const 1024
    i32.const 5
    i32.store8
    i32.const 1024)
  (func (export "cm32p2|rebound:policy/strategy@0.6|retry-after_post") (param i32))
  ;; A bump allocator over the memory above 2048, started again when it runs out.
  (func (export "cm32p2_realloc") (param i32 i32 i32) (param $size i32) (result i32)
    (local $at i32)
    (local.set $at
      (i32.and (i32.add (global.get $next) (i32.const 7)) (i32.const -8)))
    (if (i32.gt_u (i32.add (local.get $at) (local.get $size)) (i32.const 65536))
      (then (local.set $at (i32.const 2048))))
    (global.set $next (i32.add (local.get $at) (local.get $size)))
    (local.get $at))
)
