;; A component that asks for capabilities outside the inert WASI 0.2 set (an HTTP client, and
;; the filesystem of a WASI version it does not know): the host must refuse to load it.
(component
  (import "wasi:http/outgoing-handler@0.2.0" (instance))
  (import "wasi:filesystem/preopens@0.4.0" (instance))
)
