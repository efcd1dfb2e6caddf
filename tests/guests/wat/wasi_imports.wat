;; A component that asks for filesystem and network access: the host must refuse to load it.
(component
  (import "wasi:filesystem/preopens@0.2.0" (instance))
  (import "wasi:sockets/tcp@0.2.0" (instance))
)
