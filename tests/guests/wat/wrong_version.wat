;; A component built against a version of the package no host has released (0.9.0): this host
;; loads 0.1.0 and 0.2.0 only.
(component
  (instance $strategy)
  (export "rebound:policy/strategy@0.9.0" (instance $strategy))
)
