;; A component built against another version of the package.
(component
  (instance $strategy)
  (export "rebound:policy/strategy@0.2.0" (instance $strategy))
)
