;; A component built against another version of the package (0.1.0, before this host's 0.2.0).
(component
  (instance $strategy)
  (export "rebound:policy/strategy@0.1.0" (instance $strategy))
)
